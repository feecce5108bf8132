package lambda_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// TestPermanentFailureAtTheSizeLimitIsDeadLettered (issue 9): on the Lambda host, a
// record of exactly the queue's MaximumMessageSize (256 KiB on the source and
// dead-letter queues, on the emulator) that fails permanently is sent to the dead-letter
// queue, body and attributes unchanged, and reported as done (not a batch item failure),
// so its handler never runs again. Before, the send with failure attributes was refused
// ("Message must be shorter than 262144 bytes") and the record was retried.
func TestPermanentFailureAtTheSizeLimitIsDeadLettered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 3, MaximumMessageSize: sqsinfo.DefaultMaximumMessageSize})
	own := map[string]sqsworker.MessageAttribute{"tenant": {DataType: "String", StringValue: "acme"}}
	body := strings.Repeat("b", sqsinfo.DefaultMaximumMessageSize-sqsx.MessageSize(&sqsworker.Message{MessageAttributes: own}))
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.URL),
		MessageBody:       aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}},
	}); err != nil {
		t.Fatal(err)
	}
	// Wait for the message itself, never for one long poll (the emulator can answer a
	// long poll empty under load while the message is visible).
	received := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queue.URL),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		VisibilityTimeout:           60,
	}, 1, testenv.ReceiveTimeout)
	if len(received) != 1 {
		t.Fatalf("received %d messages, want the 1 sent", len(received))
	}
	message := received[0]
	record := events.SQSMessage{
		MessageId:      aws.ToString(message.MessageId),
		ReceiptHandle:  aws.ToString(message.ReceiptHandle),
		Body:           aws.ToString(message.Body),
		Attributes:     message.Attributes,
		EventSource:    "aws:sqs",
		EventSourceARN: queue.ARN,
		AWSRegion:      "us-east-1",
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"tenant": {DataType: "String", StringValue: aws.String("acme")},
		},
	}

	var calls atomic.Int32
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		calls.Add(1)
		return sqsworker.Permanent("TooBig", errors.New("cannot process this job"))
	}), lambda.WithSQSClient(client))
	invocation, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	response, err := fn(invocation, events.SQSEvent{Records: []events.SQSMessage{record}})
	if err != nil {
		t.Fatalf("invocation: %v", err)
	}
	if len(response.BatchItemFailures) != 0 {
		t.Errorf("batch item failures = %v; want none (the record was dead-lettered)", response.BatchItemFailures)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler called %d times, want 1", got)
	}
	deadLetters := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(queue.DeadLetterQueueURL),
		MessageAttributeNames: []string{"All"},
		VisibilityTimeout:     60,
	}, 1, testenv.ReceiveTimeout)
	if len(deadLetters) != 1 {
		t.Fatalf("dead-letter queue holds %d messages, want 1", len(deadLetters))
	}
	dead := deadLetters[0]
	if aws.ToString(dead.Body) != body {
		t.Errorf("dead-letter body differs (%d bytes, want %d)", len(aws.ToString(dead.Body)), len(body))
	}
	if got := dead.MessageAttributes; len(got) != 1 || aws.ToString(got["tenant"].StringValue) != "acme" {
		t.Errorf("dead-letter attributes = %v; want only tenant=acme (no room for failure attributes)", got)
	}
}
