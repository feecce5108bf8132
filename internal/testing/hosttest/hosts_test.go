package hosttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

var backoff = sqsworker.Backoff{Base: 2 * time.Second, Cap: time.Minute, Jitter: sqsworker.JitterNone}

// recorder is an observer that keeps the kinds of the events, and the outcome of
// EventFinished.
type recorder struct {
	mu      sync.Mutex
	kinds   []string
	outcome sqsworker.Outcome
	hosts   map[string]bool
}

func (r *recorder) Observe(_ context.Context, ev sqsworker.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds = append(r.kinds, ev.Kind.String())
	if ev.Kind == sqsworker.EventFinished {
		r.outcome = ev.Outcome
	}
	if r.hosts == nil {
		r.hosts = map[string]bool{}
	}
	r.hosts[ev.Host] = true
}

func (r *recorder) settled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.kinds) == 0 {
		return false
	}
	switch r.kinds[len(r.kinds)-1] {
	case "deleted", "delete-failed", "rescheduled", "reschedule-failed", "released":
		return true
	}
	return false
}

// result is what one host did with the message.
type result struct {
	effects []string // SQS effects, in order
	events  []string // observer event kinds, in order
	kind    sqsworker.OutcomeKind
	reason  string
}

// message is the one message of a case, as SQS hands it out on its third receive; the
// first receive was firstReceive ago.
func message(firstReceive time.Duration) (id, receipt, body string, attributes map[string]string) {
	now := time.Now()
	return "m-1", "rh-1", `{"order":"A-1"}`, map[string]string{
		"ApproximateReceiveCount":          "3",
		"SentTimestamp":                    strconv.FormatInt(now.Add(-firstReceive-time.Second).UnixMilli(), 10),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(now.Add(-firstReceive).UnixMilli(), 10),
	}
}

// scenario is what differs between the cases besides the handler: when the message was
// first received, whether dead-letter sends fail, and the queue's maxReceiveCount (if
// zero, 5: the message, on its third receive, is not at its last).
type scenario struct {
	firstReceive    time.Duration
	failSends       bool
	maxReceiveCount int
}

func runPoller(t *testing.T, handler sqsworker.Handler, sc scenario) result {
	t.Helper()
	id, receipt, body, attributes := message(sc.firstReceive)
	fake := &fakeSQS{failSends: sc.failSends, maxReceiveCount: sc.maxReceiveCount, message: &types.Message{
		MessageId: aws.String(id), ReceiptHandle: aws.String(receipt), Body: aws.String(body), Attributes: attributes,
	}}
	observed := &recorder{}
	server, err := poller.New(fake, poller.Config{
		QueueURL: queueURL, Concurrency: 1, MaxMessages: 1, WaitTime: time.Second, Backoff: backoff,
		HeartbeatInterval: 10 * time.Second, VisibilityExtension: 30 * time.Second, DeleteFlushInterval: 10 * time.Millisecond,
		Observer: observed, Logger: slog.New(slog.DiscardHandler),
	}, handler)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !observed.settled(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("poller: message not settled after 10 s; events %v", observed.kinds)
		}
	}
	if err := server.Shutdown(context.Background()); err != nil {
		t.Fatalf("poller: Shutdown: %v", err)
	}
	if !observed.hosts["poller"] || len(observed.hosts) != 1 {
		t.Errorf("poller events name hosts %v", observed.hosts)
	}
	return result{effects: fake.recorded(), events: observed.kinds, kind: observed.outcome.Kind, reason: observed.outcome.Reason}
}

func runLambda(t *testing.T, handler sqsworker.Handler, sc scenario) result {
	t.Helper()
	id, receipt, body, attributes := message(sc.firstReceive)
	fake := &fakeSQS{failSends: sc.failSends, maxReceiveCount: sc.maxReceiveCount}
	observed := &recorder{}
	b, err := lambda.NewBatchHandler(handler, lambda.WithSQSClient(fake), lambda.WithBackoff(backoff), lambda.WithObserver(observed),
		lambda.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	response, err := b.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: id, ReceiptHandle: receipt, Body: body, Attributes: attributes, EventSourceARN: queueARN, EventSource: "aws:sqs",
	}}})
	if err != nil {
		t.Fatalf("lambda: %v", err)
	}
	effects := fake.recorded()
	if len(response.BatchItemFailures) == 0 {
		effects = append(effects, "delete "+receipt) // the event source mapping deletes a success
	} else if response.BatchItemFailures[0].ItemIdentifier != id {
		t.Errorf("lambda: batch item failures %+v", response.BatchItemFailures)
	}
	if !observed.hosts["lambda"] || len(observed.hosts) != 1 {
		t.Errorf("lambda events name hosts %v", observed.hosts)
	}
	return result{effects: effects, events: observed.kinds, kind: observed.outcome.Kind, reason: observed.outcome.Reason}
}

// TestBothHostsCarryOutOutcomesAlike is the shared outcome table: every kind of handler
// result, through the poller and through the Lambda adapter, gives the same SQS effects
// (the poller's DeleteMessageBatch is the event source mapping's delete of a record
// left out of batchItemFailures), the same outcome and the same observer events.
func TestBothHostsCarryOutOutcomesAlike(t *testing.T) {
	t.Parallel()
	dlq := func(reason, text string) string {
		return fmt.Sprintf(`dead-letter %s {"order":"A-1"} [failure-error=%s failure-message-id=m-1 failure-reason=%s failure-receive-count=3 failure-source-queue=%s]`, dlqURL, text, reason, queueARN)
	}
	tests := []struct {
		name         string
		handler      sqsworker.HandlerFunc
		firstReceive time.Duration
		failSends    bool
		// lastReceive: the queue's maxReceiveCount is the message's receive count (3).
		lastReceive bool
		want        result
	}{
		{name: "success", handler: func(context.Context, *sqsworker.Message) error { return nil },
			want: result{effects: []string{"delete rh-1"}, events: []string{"received", "started", "finished", "deleted"}, kind: sqsworker.OutcomeDelete}},
		{name: "error: backoff of the third receive", handler: func(context.Context, *sqsworker.Message) error { return errors.New("downstream 503") },
			want: result{effects: []string{"visibility rh-1 8s"}, events: []string{"received", "started", "finished", "rescheduled"}, kind: sqsworker.OutcomeRetry, reason: "HandlerError"}},
		{name: "panic", handler: func(context.Context, *sqsworker.Message) error { panic("boom") },
			want: result{effects: []string{"visibility rh-1 8s"}, events: []string{"received", "started", "finished", "rescheduled"}, kind: sqsworker.OutcomeRetry, reason: "Panic"}},
		{name: "retry-after rounds up", handler: func(context.Context, *sqsworker.Message) error {
			return sqsworker.RetryAfter(1500*time.Millisecond, errors.New("429"))
		}, want: result{effects: []string{"visibility rh-1 2s"}, events: []string{"received", "started", "finished", "rescheduled"}, kind: sqsworker.OutcomeRetryAfter, reason: "RetryAfter"}},
		{name: "defer", handler: func(context.Context, *sqsworker.Message) error { return sqsworker.Defer(30*time.Second, "NotYet") },
			want: result{effects: []string{"visibility rh-1 30s"}, events: []string{"received", "started", "finished", "rescheduled"}, kind: sqsworker.OutcomeDefer, reason: "NotYet"}},
		{name: "retry-after clamped to what is left of 12 h since the first receive", firstReceive: 11 * time.Hour,
			handler: func(context.Context, *sqsworker.Message) error {
				return sqsworker.RetryAfter(13*time.Hour, errors.New("later"))
			},
			want: result{effects: []string{"visibility rh-1 3570s"}, events: []string{"received", "started", "finished", "rescheduled"}, kind: sqsworker.OutcomeRetryAfter, reason: "RetryAfter"}},
		{name: "permanent: dead-letter send, then delete", handler: func(context.Context, *sqsworker.Message) error {
			return sqsworker.Permanent("MalformedBody", errors.New("bad json"))
		}, want: result{effects: []string{dlq("MalformedBody", "permanent failure (MalformedBody): bad json"), "delete rh-1"}, events: []string{"received", "started", "finished", "dead-lettered", "deleted"},
			kind: sqsworker.OutcomeDeadLetter, reason: "MalformedBody"}},
		{name: "permanent, dead-letter send fails: retried with backoff", failSends: true, handler: func(context.Context, *sqsworker.Message) error {
			return sqsworker.Permanent("MalformedBody", errors.New("bad json"))
		}, want: result{effects: []string{"dead-letter send refused", "visibility rh-1 8s"}, events: []string{"received", "started", "finished", "dead-letter-failed", "rescheduled"},
			kind: sqsworker.OutcomeDeadLetter, reason: "MalformedBody"}},
		{name: "error at the last receive: dead-lettered as RetriesExhausted, then deleted", lastReceive: true,
			handler: func(context.Context, *sqsworker.Message) error { return errors.New("downstream 503") },
			want: result{effects: []string{dlq("RetriesExhausted", "downstream 503"), "delete rh-1"}, events: []string{"received", "started", "finished", "dead-lettered", "deleted"},
				kind: sqsworker.OutcomeRetry, reason: "HandlerError"}},
		{name: "retry-after at the last receive: dead-lettered as RetriesExhausted", lastReceive: true,
			handler: func(context.Context, *sqsworker.Message) error {
				return sqsworker.RetryAfter(time.Minute, errors.New("429"))
			},
			want: result{effects: []string{dlq("RetriesExhausted", "retry after 1m0s: 429"), "delete rh-1"}, events: []string{"received", "started", "finished", "dead-lettered", "deleted"},
				kind: sqsworker.OutcomeRetryAfter, reason: "RetryAfter"}},
		{name: "error at the last receive, dead-letter send fails: the redrive policy moves it", lastReceive: true, failSends: true,
			handler: func(context.Context, *sqsworker.Message) error { return errors.New("downstream 503") },
			want: result{effects: []string{"dead-letter send refused", "visibility rh-1 8s"}, events: []string{"received", "started", "finished", "dead-letter-failed", "rescheduled"},
				kind: sqsworker.OutcomeRetry, reason: "HandlerError"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := scenario{firstReceive: tc.firstReceive, failSends: tc.failSends}
			if tc.lastReceive {
				sc.maxReceiveCount = 3
			}
			hosts := map[string]result{
				"poller": runPoller(t, tc.handler, sc),
				"lambda": runLambda(t, tc.handler, sc),
			}
			for name, got := range hosts {
				assert.Equal(t, tc.want, got, name)
			}
		})
	}
}

// TestBothHostsReportTheSameEventSequence is the shared observer-sequence test for one
// scenario, a failure then a success of the same message: each host reports
// received, started, finished, rescheduled, then received, started, finished,
// deleted, and a Counter over either host's events gives the same Stats.
func TestBothHostsReportTheSameEventSequence(t *testing.T) {
	t.Parallel()
	attempts := map[string]int{}
	var mu sync.Mutex
	handler := func(host string) sqsworker.HandlerFunc {
		return func(context.Context, *sqsworker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[host]++
			if attempts[host] == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		}
	}
	want := []string{"received", "started", "finished", "rescheduled", "received", "started", "finished", "deleted"}
	var sequences [][]string
	for _, host := range []string{"poller", "lambda"} {
		var sequence []string
		for range 2 {
			var got result
			if host == "poller" {
				got = runPoller(t, handler(host), scenario{})
			} else {
				got = runLambda(t, handler(host), scenario{})
			}
			sequence = append(sequence, got.events...)
		}
		if !slices.Equal(sequence, want) {
			t.Errorf("%s events %v, want %v", host, sequence, want)
		}
		sequences = append(sequences, sequence)
	}
	if !slices.Equal(sequences[0], sequences[1]) {
		t.Errorf("the hosts reported different sequences:\npoller %v\nlambda %v", sequences[0], sequences[1])
	}
}
