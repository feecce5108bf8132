package poller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// TestEmulatorPermanentFailureAtTheSizeLimitDeadLettersAfterOneCall (issue 9): a message
// of exactly the queue's MaximumMessageSize (256 KiB on the source and dead-letter
// queues) that fails permanently is in the dead-letter queue after one handler call,
// body and attributes unchanged. The failure attributes do not fit and are left out;
// before, the send was refused ("Message must be shorter than 262144 bytes") and the
// handler ran again.
func TestEmulatorPermanentFailureAtTheSizeLimitDeadLettersAfterOneCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second, MaxReceiveCount: 3, MaximumMessageSize: sqsinfo.DefaultMaximumMessageSize})
	own := map[string]sqsworker.MessageAttribute{"tenant": {DataType: "String", StringValue: "acme"}}
	body := strings.Repeat("b", sqsinfo.DefaultMaximumMessageSize-sqsx.MessageSize(&sqsworker.Message{MessageAttributes: own}))
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.URL),
		MessageBody:       aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}},
	}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	server := startServer(t, client, Config{QueueURL: queue.URL, Backoff: sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone}},
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			calls.Add(1)
			return sqsworker.Permanent("TooBig", errors.New("cannot process this job"))
		}))
	testenv.Eventually(t, 20*time.Second, "the message dead-lettered and deleted from the source queue", func() bool {
		stats := server.Stats()
		return stats.DeadLettered == 1 && stats.Deleted == 1
	})
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
	if len(dead.MessageAttributes) != 1 || aws.ToString(dead.MessageAttributes["tenant"].StringValue) != "acme" {
		t.Errorf("dead-letter attributes = %v; want only tenant=acme (no room for failure attributes)", dead.MessageAttributes)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler called %d times, want 1", got)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible+inFlight != 0 {
		t.Errorf("source queue still holds %d+%d messages", visible, inFlight)
	}
}
