package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

// record builds one SQS event record of queue q with the given id and body.
func n0Record(id, body, group string) events.SQSMessage {
	attributes := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": fmt.Sprint(time.Now().UnixMilli())}
	arn := "arn:aws:sqs:us-east-1:000000000000:q"
	if group != "" {
		attributes["MessageGroupId"] = group
		arn += ".fifo"
	}
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, Attributes: attributes, EventSourceARN: arn, EventSource: "aws:sqs"}
}

// TestEveryRecordNotConfirmedIsReported is CASES.md N01, unit lane: a 10 s deadline,
// concurrency 2, deadline margin 1.5 s; r1 succeeds, r2 fails, r3 panics, r4 returns
// ctx.Err() when cancelled, r5 ignores its context, r6 is queued behind r4 and r5. At
// 8.5 s the handlers' contexts end; r5 is abandoned after at most 0.75 s; the response
// comes before 9.5 s and lists every record but r1.
func TestEveryRecordNotConfirmedIsReported(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // r5 ends with the test
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return n01Record(ctx, m.ID, release)
	})
	fake := &recordingSQS{}
	var counter sqsworker.Counter
	b := newBatch(t, handler, lambda.WithSQSClient(fake), lambda.WithConcurrency(2), lambda.WithDeadlineMargin(1500*time.Millisecond),
		lambda.WithLogger(logger), lambda.WithObserver(&counter))
	event := events.SQSEvent{}
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		event.Records = append(event.Records, n0Record(id, "{}", ""))
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-n01"}), start.Add(10*time.Second))
	defer cancel()
	response, err := b.Handle(ctx, event)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if elapsed < 8500*time.Millisecond || elapsed > 9500*time.Millisecond {
		t.Errorf("responded after %s, want between 8.5 s (deadline − margin) and 9.5 s", elapsed)
	}
	var failed []string
	for _, f := range response.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	if want := []string{"r2", "r3", "r4", "r5", "r6"}; !slices.Equal(failed, want) {
		t.Errorf("batchItemFailures = %v, want exactly %v", failed, want)
	}
	encoded, _ := json.Marshal(response)
	if !strings.Contains(string(encoded), `"itemIdentifier":"r2"`) {
		t.Errorf("response %s does not use the lower-case keys", encoded)
	}
	lines := map[string]string{} // message id → the lines about it
	for line := range strings.Lines(logs.String()) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if id, ok := entry["message_id"].(string); ok {
			lines[id] += fmt.Sprint(entry["msg"], " ", entry["reason"], "\n")
		}
	}
	for id, want := range map[string]string{"r3": "panic recovered", "r5": "handler did not return after cancellation (abandoned)", "r6": "not started: invocation deadline"} {
		if !strings.Contains(lines[id], want) {
			t.Errorf("logs of %s = %q, want a line with %q", id, lines[id], want)
		}
	}
	stats := b.Stats()
	if stats.Abandoned != 1 || counter.Stats().Abandoned != 1 {
		t.Errorf("abandoned = %d (observer %d), want 1", stats.Abandoned, counter.Stats().Abandoned)
	}
	if stats.Received != 6 || stats.Deleted != 1 || stats.InFlight != 0 || stats.Released != 2 || stats.Failed != 3 {
		t.Errorf("stats = %+v, want 6 received, 1 deleted (r1), 3 failed (r2, r3, r4), 2 released (r5, r6), none in flight", stats)
	}
}

// TestDetachedWorkIsASuccess pins the remaining gap N01 names: only the handler's
// return value is observed, so a handler that starts a goroutine and returns nil at once
// is reported as a success whatever the goroutine does later.
func TestDetachedWorkIsASuccess(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		go func() { defer close(done); time.Sleep(50 * time.Millisecond) }()
		return nil
	})
	response, err := batchFunc(t, handler, lambda.WithSQSClient(&recordingSQS{}))(context.Background(), events.SQSEvent{Records: []events.SQSMessage{n0Record("d1", "{}", "")}})
	<-done
	if err != nil || len(response.BatchItemFailures) != 0 {
		t.Fatalf("response %+v, %v: want a success", response, err)
	}
}

// TestNoFailedGroupStateCarriesOver is CASES.md N02, unit lane: one adapter built
// once handles two invocations in one process; a1 fails on attempt 1 only. In invocation
// 2 the handler is called for a1 and the response is {"batchItemFailures":[]}.
func TestNoFailedGroupStateCarriesOver(t *testing.T) {
	t.Parallel()
	var calls []string
	handler := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls = append(calls, fmt.Sprintf("%s#%d", m.ID, m.ReceiveCount))
		if m.ID == "a1" && m.ReceiveCount == 1 {
			return errors.New("one-off failure")
		}
		return nil
	})
	fn := batchFunc(t, handler, lambda.WithSQSClient(&recordingSQS{}), lambda.WithConcurrency(1)) // built once, as lambda.Start(handler) does

	first := events.SQSEvent{Records: []events.SQSMessage{n0Record("a1", "{}", "g1"), n0Record("b1", "{}", "g2")}}
	response, err := invoke(context.Background(), fn, mustJSON(t, first))
	if err != nil || response != `{"batchItemFailures":[{"itemIdentifier":"a1"}]}` {
		t.Fatalf("invocation 1: %s, %v; want only a1 failed", response, err)
	}
	second := events.SQSEvent{Records: []events.SQSMessage{n0Record("a1", "{}", "g1")}}
	second.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	response, err = invoke(context.Background(), fn, mustJSON(t, second))
	if err != nil || response != `{"batchItemFailures":[]}` {
		t.Fatalf("invocation 2: %s, %v; want {\"batchItemFailures\":[]}", response, err)
	}
	if want := []string{"a1#1", "b1#1", "a1#2"}; !slices.Equal(calls, want) {
		t.Errorf("handler calls %v, want %v (a1 handled again in invocation 2)", calls, want)
	}
}

// TestPoisonHeadSkipsItsGroupOnEveryReceive is N02's poison variant, unit lane: with
// a1 always failing, every invocation calls the handler for a1 once, lists a1, a2 and a3,
// and logs a2 and a3 as skipped behind the failed head, not as handler failures. (The
// queue's maxReceiveCount is 5, so none of the three receives is a1's last.)
func TestPoisonHeadSkipsItsGroupOnEveryReceive(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
	calls := 0
	handler := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		if m.ID != "a1" {
			t.Errorf("handler called for %s behind the failed head", m.ID)
		}
		calls++
		return errors.New("poison")
	})
	b := newBatch(t, handler, lambda.WithSQSClient(&recordingSQS{maxReceiveCount: 5}), lambda.WithLogger(logger))
	for receive := 1; receive <= 3; receive++ {
		event := events.SQSEvent{Records: []events.SQSMessage{n0Record("a1", "{}", "g1"), n0Record("a2", "{}", "g1"), n0Record("a3", "{}", "g1")}}
		for i := range event.Records {
			event.Records[i].Attributes["ApproximateReceiveCount"] = fmt.Sprint(receive)
		}
		response, err := b.Handle(context.Background(), event)
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, f := range response.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
		if want := []string{"a1", "a2", "a3"}; !slices.Equal(failed, want) {
			t.Errorf("receive %d: batchItemFailures %v, want %v", receive, failed, want)
		}
	}
	if calls != 3 {
		t.Errorf("handler called %d times for a1, want 3 (once per receive)", calls)
	}
	if stats := b.Stats(); stats.Failed != 3 || stats.Released != 6 {
		t.Errorf("stats = %+v, want 3 failed attempts (a1) and 6 released (a2, a3 on each receive)", stats)
	}
	skipped := 0
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `"message_id":"a2"`) || strings.Contains(line, `"message_id":"a3"`) {
			if !strings.Contains(line, "an earlier record of its message group failed") || !strings.Contains(line, `"receive_count"`) {
				t.Errorf("log line about a skipped record: %s", line)
			}
			skipped++
		}
	}
	if skipped != 6 {
		t.Errorf("%d log lines about a2 and a3, want 6 (one per receive each)", skipped)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	payload, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// n01Record is what scenario N01's handler does with record name (r1 to r6) on its
// first delivery: r1 and r6 succeed after 100 ms, r2 fails, r3 panics, r4 runs until its
// context ends (the hard timeout) and r5 until release is closed (or 30 s), past the
// invocation's deadline.
func n01Record(ctx context.Context, name string, release <-chan struct{}) error {
	switch name {
	case "r1", "r6":
		time.Sleep(100 * time.Millisecond)
		return nil
	case "r2":
		return errors.New("downstream 503")
	case "r3":
		panic("r3 exploded")
	case "r4":
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return nil
		}
	case "r5":
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		return nil
	}
	return fmt.Errorf("unexpected record %q", name)
}
