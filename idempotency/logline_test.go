package idempotency_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

// TestSuppressedDuplicateLeavesOneInfoLine (LocalStack or ElasticMQ, moto): a worker with
// the idempotency middleware and neither logger set, as the README writes it. A
// duplicate of a completed job left no line at all: the middleware discarded its logs by
// default while the poller logs to slog.Default. Now the middleware logs to
// slog.Default too, and the duplicate, deleted without running the handler, leaves
// exactly one line at info or above: idempotency.LogCompletedDuplicate, naming it.
//
// Not parallel: it replaces slog.Default for its duration.
func TestSuppressedDuplicateLeavesOneInfoLine(t *testing.T) {
	var logs logBuffer
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(previous) })

	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	emulator := newEmulatorTable(t)
	var calls atomic.Int64
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		calls.Add(1)
		return nil
	}), idempotency.Middleware(emulator.store(), idempotency.Config{}))
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second}, handler)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitTimeout)
			defer cancel()
			_ = server.Shutdown(ctx)
		}
	}
	t.Cleanup(stop)

	send := func() string {
		output, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(`{"job":1}`),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				sqsworker.AttributeIdempotencyKey: {DataType: aws.String("String"), StringValue: aws.String("order-42")}}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(output.MessageId)
	}
	deleted := func(what string) {
		testenv.Eventually(t, testenv.ReceiveTimeout, what, func() bool {
			visible, inFlight := testenv.Counts(t, client, queue.URL)
			return visible == 0 && inFlight == 0
		})
	}
	send()
	testenv.Eventually(t, testenv.ReceiveTimeout, "the original runs", func() bool { return calls.Load() == 1 })
	deleted("the original is deleted")
	duplicate := send()
	testenv.Eventually(t, testenv.ReceiveTimeout, "the duplicate's line", func() bool {
		return strings.Contains(logs.String(), idempotency.LogCompletedDuplicate)
	})
	deleted("the duplicate is deleted")
	stop()

	var lines []string
	for line := range strings.Lines(logs.String()) {
		var entry struct {
			Level     string `json:"level"`
			Msg       string `json:"msg"`
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry.MessageID == duplicate || strings.Contains(line, duplicate) {
			lines = append(lines, entry.Level+" "+entry.Msg)
		}
	}
	if len(lines) != 1 || lines[0] != "INFO "+idempotency.LogCompletedDuplicate {
		t.Errorf("the duplicate's lines: %q; want exactly [%q]", lines, "INFO "+idempotency.LogCompletedDuplicate)
	}
	if calls.Load() != 1 {
		t.Errorf("handler calls %d; want 1", calls.Load())
	}
}
