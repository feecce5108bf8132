package hosttest

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const (
	queueName = "orders"
	account   = "000000000000"
	queueARN  = "arn:aws:sqs:us-east-1:" + account + ":" + queueName
	queueURL  = "https://sqs.us-east-1.amazonaws.com/" + account + "/" + queueName
	dlqURL    = queueURL + "-dlq"
)

// fakeSQS serves one message to the poller once and records every call that changes a
// message, as effects both hosts can be compared by.
type fakeSQS struct {
	mu        sync.Mutex
	message   *types.Message
	effects   []string
	failSends bool
	// maxReceiveCount is the redrive policy's; if zero, 5.
	maxReceiveCount int
}

func (f *fakeSQS) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.effects = append(f.effects, fmt.Sprintf(format, args...))
}

func (f *fakeSQS) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.effects...)
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	message := f.message
	f.message = nil
	f.mu.Unlock()
	if message != nil {
		return &sqs.ReceiveMessageOutput{Messages: []types.Message{*message}}, nil
	}
	select { // a short long poll
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return &sqs.ReceiveMessageOutput{}, nil
	}
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, input *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	output := &sqs.DeleteMessageBatchOutput{}
	for _, entry := range input.Entries {
		f.record("delete %s", aws.ToString(entry.ReceiptHandle))
		output.Successful = append(output.Successful, types.DeleteMessageBatchResultEntry{Id: entry.Id})
	}
	return output, nil
}

func (f *fakeSQS) ChangeMessageVisibility(_ context.Context, input *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.record("visibility %s %ds", aws.ToString(input.ReceiptHandle), input.VisibilityTimeout)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, input *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	output := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, entry := range input.Entries {
		f.record("visibility %s %ds", aws.ToString(entry.ReceiptHandle), entry.VisibilityTimeout)
		output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
	}
	return output, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if f.failSends {
		f.record("dead-letter send refused")
		return nil, fmt.Errorf("throttled")
	}
	var names []string
	for name, value := range input.MessageAttributes {
		names = append(names, name+"="+aws.ToString(value.StringValue))
	}
	sort.Strings(names)
	f.record("dead-letter %s %s [%s]", aws.ToString(input.QueueUrl), aws.ToString(input.MessageBody), strings.Join(names, " "))
	return &sqs.SendMessageOutput{MessageId: aws.String("dlq-1")}, nil
}

func (f *fakeSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"QueueArn":           queueARN,
		"VisibilityTimeout":  "30",
		"MaximumMessageSize": "262144",
		"RedrivePolicy":      fmt.Sprintf(`{"deadLetterTargetArn":"%s-dlq","maxReceiveCount":%d}`, queueARN, cmp.Or(f.maxReceiveCount, 5)),
	}}, nil
}

func (f *fakeSQS) GetQueueUrl(_ context.Context, input *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/" + aws.ToString(input.QueueOwnerAWSAccountId) + "/" + aws.ToString(input.QueueName))}, nil
}
