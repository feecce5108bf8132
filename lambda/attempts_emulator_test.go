package lambda_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
)

// asRecord is the event record the event source mapping would build from a received
// message of queueARN.
func asRecord(message types.Message, queueARN string) events.SQSMessage {
	attributes := map[string]events.SQSMessageAttribute{}
	for name, value := range message.MessageAttributes {
		attributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(value.DataType), StringValue: value.StringValue}
	}
	return events.SQSMessage{
		MessageId:         aws.ToString(message.MessageId),
		ReceiptHandle:     aws.ToString(message.ReceiptHandle),
		Body:              aws.ToString(message.Body),
		Attributes:        message.Attributes,
		MessageAttributes: attributes,
		EventSource:       "aws:sqs",
		EventSourceARN:    queueARN,
		AWSRegion:         "us-east-1",
	}
}

// TestJobMaxAttemptsOnLambda: on the Lambda host, a job type limited to 2 attempts on a
// queue with maxReceiveCount 5 is a batch item failure after its first failed attempt
// and, after its second, is sent to the dead-letter queue by the function with reason
// RetriesExhausted and that attempt's error, and reported done (not a failure).
func TestJobMaxAttemptsOnLambda(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	sent, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.URL),
		MessageBody:       aws.String("{}"),
		MessageAttributes: map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("limited")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := sqsworker.NewServeMux()
	calls := 0
	mux.RegisterFunc("limited", func(_ context.Context, m *sqsworker.Message) error {
		calls++
		return fmt.Errorf("attempt %d failed", m.Attempt())
	}, sqsworker.JobMaxAttempts(2), sqsworker.JobRetryDelays(0))
	batch, err := lambda.NewBatchHandler(mux, lambda.WithSQSClient(client))
	if err != nil {
		t.Fatal(err)
	}
	fn := batch.Handle
	for attempt := 1; attempt <= 2; attempt++ {
		received := testenv.Receive(t, client, sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queue.URL),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			VisibilityTimeout:           60,
		}, 1, testenv.ReceiveTimeout)
		if len(received) != 1 {
			t.Fatalf("attempt %d: received %d messages, want 1", attempt, len(received))
		}
		invocation, cancel := context.WithTimeout(ctx, 30*time.Second)
		response, err := fn(invocation, events.SQSEvent{Records: []events.SQSMessage{asRecord(received[0], queue.ARN)}})
		cancel()
		if err != nil {
			t.Fatalf("attempt %d: invocation: %v", attempt, err)
		}
		if wantFailures := 2 - attempt; len(response.BatchItemFailures) != wantFailures {
			t.Fatalf("attempt %d: batch item failures %v, want %d", attempt, response.BatchItemFailures, wantFailures)
		}
	}
	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 1)
	got := failureAttributes(dead[0])
	if got[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted || got[sqsworker.AttributeFailureError] != "attempt 2 failed" ||
		got[sqsworker.AttributeFailureMessageID] != aws.ToString(sent.MessageId) || got[sqsworker.AttributeFailureReceiveCount] != "2" {
		t.Errorf("dead-letter copy attributes %v, want RetriesExhausted, the second attempt's error, receive count 2", got)
	}
	if calls != 2 {
		t.Errorf("handler called %d times, want 2", calls)
	}
}

// TestLambdaDeadlineIsNoAttempt: on the Lambda host, a job of a type limited to 2
// attempts whose handler outlasts two invocations' deadlines (the adapter ends its
// context with ErrDeadline) is recorded as interrupted by the idempotency middleware
// (moto's DynamoDB): at its third receive it runs as attempt 1, fails, and at its fourth
// (attempt 2) is dead-lettered with reason RetriesExhausted, having had both attempts.
func TestLambdaDeadlineIsNoAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 6})
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.URL),
		MessageBody:       aws.String("{}"),
		MessageAttributes: map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("slow")}},
	}); err != nil {
		t.Fatal(err)
	}
	dynamo := testenv.DynamoDB(t)
	store := idempotency.NewDynamoDBStore(dynamo, testenv.NewTable(t, dynamo))
	var attempts []int
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("slow", func(ctx context.Context, m *sqsworker.Message) error {
		attempts = append(attempts, m.Attempt())
		if len(attempts) <= 2 {
			<-ctx.Done() // outlasts the invocation
			return context.Cause(ctx)
		}
		return fmt.Errorf("attempt %d failed", m.Attempt())
	}, sqsworker.JobMaxAttempts(2), sqsworker.JobRetryDelays(0),
		sqsworker.JobMiddleware(idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromMessageID, MinRemaining: 100 * time.Millisecond})))
	batch, err := lambda.NewBatchHandler(mux, lambda.WithSQSClient(client), lambda.WithDeadlineMargin(time.Second), lambda.WithBackoff(sqsworker.Backoff{Base: time.Millisecond, Cap: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	fn := batch.Handle
	for receive := 1; receive <= 4; receive++ {
		received := testenv.Receive(t, client, sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queue.URL),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			VisibilityTimeout:           60,
		}, 1, testenv.ReceiveTimeout)
		if len(received) != 1 {
			t.Fatalf("receive %d: %d messages, want 1", receive, len(received))
		}
		// The function timeout. It leaves the idempotency claim 4 s before the adapter's
		// deadline: a claim the deadline cuts writes nothing, so its receive counts as an
		// attempt (as a SIGKILL's does), and at 2 s a loaded serialized moto once took
		// longer than that for the claim's PutItem.
		invocation, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := fn(invocation, events.SQSEvent{Records: []events.SQSMessage{asRecord(received[0], queue.ARN)}})
		cancel()
		if err != nil {
			t.Fatalf("receive %d: invocation: %v", receive, err)
		}
	}
	if fmt.Sprint(attempts) != "[1 1 1 2]" {
		t.Errorf("calls at attempts %v, want [1 1 1 2] (the two deadlines no attempts)", attempts)
	}
	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 1)
	if got := failureAttributes(dead[0]); got[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted || got[sqsworker.AttributeFailureError] != "attempt 2 failed" {
		t.Errorf("dead-letter copy attributes %v, want RetriesExhausted with the second attempt's error", got)
	}
}
