package lambda_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

// recordingSQS is a recording fake of the SQS calls the adapter makes. It answers
// GetQueueAttributes with a redrive policy pointing at dlqARN and GetQueueUrl with dlqURL.
type recordingSQS struct {
	mu sync.Mutex

	visibility    []*sqs.ChangeMessageVisibilityBatchInput
	sent          []*sqs.SendMessageInput
	deleted       []*sqs.DeleteMessageBatchInput
	getAttributes []string
	getURL        []string

	// Errors to return; nil means success.
	visibilityErr error
	sendErr       error
	// failVisibilityIDs makes ChangeMessageVisibilityBatch report these entry ids failed.
	failVisibilityIDs map[string]bool
	// maxReceiveCount is the redrive policy's; if zero, 3.
	maxReceiveCount int
}

var _ lambda.SQSAPI = (*recordingSQS)(nil)

const (
	testDLQURL = "https://sqs.us-east-2.amazonaws.com/123456789012/orders-dlq"
	testDLQARN = "arn:aws:sqs:us-east-2:123456789012:orders-dlq"
)

func (f *recordingSQS) ChangeMessageVisibilityBatch(_ context.Context, input *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.visibility = append(f.visibility, input)
	if f.visibilityErr != nil {
		return nil, f.visibilityErr
	}
	output := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, entry := range input.Entries {
		if f.failVisibilityIDs[aws.ToString(entry.Id)] {
			output.Failed = append(output.Failed, types.BatchResultErrorEntry{Id: entry.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
			continue
		}
		output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
	}
	return output, nil
}

func (f *recordingSQS) DeleteMessageBatch(_ context.Context, input *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, input)
	return &sqs.DeleteMessageBatchOutput{}, nil
}

func (f *recordingSQS) SendMessage(_ context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, input)
	if f.sendErr != nil {
		return nil, f.sendErr
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("dlq-message")}, nil
}

func (f *recordingSQS) GetQueueAttributes(_ context.Context, input *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getAttributes = append(f.getAttributes, aws.ToString(input.QueueUrl))
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"QueueArn":          "arn:aws:sqs:us-east-2:123456789012:orders",
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%d}`, testDLQARN, cmp.Or(f.maxReceiveCount, 3)),
	}}, nil
}

func (f *recordingSQS) GetQueueUrl(_ context.Context, input *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getURL = append(f.getURL, aws.ToString(input.QueueName))
	if aws.ToString(input.QueueName) != "orders-dlq" {
		return nil, errors.New("fake: no such queue")
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(testDLQURL)}, nil
}

// visibilityByReceipt flattens the recorded visibility requests to receipt handle →
// visibility timeout in seconds.
func (f *recordingSQS) visibilityByReceipt() map[string]int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	seconds := make(map[string]int32)
	for _, input := range f.visibility {
		for _, entry := range input.Entries {
			seconds[aws.ToString(entry.ReceiptHandle)] = entry.VisibilityTimeout
		}
	}
	return seconds
}

// newBatch builds the batch handler, failing the test on a configuration error.
func newBatch(t testing.TB, handler sqsworker.Handler, options ...lambda.Option) *lambda.BatchHandler {
	t.Helper()
	batch, err := lambda.NewBatchHandler(handler, options...)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// batchFunc is newBatch's Handle, the function lambda.Start is given.
func batchFunc(t testing.TB, handler sqsworker.Handler, options ...lambda.Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	t.Helper()
	return newBatch(t, handler, options...).Handle
}
