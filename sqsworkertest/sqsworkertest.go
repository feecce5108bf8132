// Package sqsworkertest runs a handler (or a middleware chain) on a message in-process
// and reports what either host would do with it: delete it, send it to the dead-letter
// queue, or make it visible again after some visibility timeout. A job's unit test needs
// no emulator and no host:
//
//	func TestMalformedBodyIsDeadLettered(t *testing.T) {
//		result := sqsworkertest.Run(t.Context(), handler, sqsworkertest.NewMessage("{not json"))
//		if !result.DeadLettered || result.Outcome.Reason != "MalformedBody" {
//			t.Fatalf("got %+v, want a dead letter for MalformedBody", result)
//		}
//	}
//
// The decision is the one both hosts carry out (Classify, then the runtime's settlement
// plan, with the same backoff, clamping and rounding), so what the test sees is what the
// poller and the Lambda adapter do.
package sqsworkertest

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// Result is what a host would do with the message after the handler returned.
type Result struct {
	// Err is the handler's error (a *sqsworker.PanicError when it panicked).
	Err error
	// Outcome is sqsworker.Classify(Err).
	Outcome sqsworker.Outcome
	// Deleted: the message is done with and deleted (handled, or dead-lettered).
	Deleted bool
	// DeadLettered: the message is sent to the dead-letter queue first (a permanent
	// failure, with the dead-letter send enabled).
	DeadLettered bool
	// Visibility is when the message becomes visible again if it is not deleted (or if
	// the dead-letter send failed): the retry delay, clamped to SQS's 12-hour limit.
	Visibility time.Duration
	// VisibilitySeconds is Visibility as sent to SQS: whole seconds, rounded up.
	VisibilitySeconds int32
	// Panicked: the handler panicked (the panic is recovered, as the hosts do).
	Panicked bool
}

// Option changes how [Run] plans the outcome.
type Option func(*options)

type options struct {
	backoff    sqsworker.Backoff
	deadLetter bool
	now        func() time.Time
	receivedAt time.Time
}

// WithBackoff sets the retry policy; without it, sqsworker.Backoff's defaults without
// jitter, so that Visibility is predictable.
func WithBackoff(b sqsworker.Backoff) Option { return func(o *options) { o.backoff = b } }

// WithoutDeadLetterSend plans as a host with the dead-letter send disabled: permanent
// failures are retried and left to the redrive policy.
func WithoutDeadLetterSend() Option { return func(o *options) { o.deadLetter = false } }

// WithClock sets the time the plan is made at (default time.Now) and when the message
// was received (default: that time).
func WithClock(now func() time.Time, receivedAt time.Time) Option {
	return func(o *options) { o.now, o.receivedAt = now, receivedAt }
}

// Run calls handler on message as a host would (panics recovered) and returns what the
// host does next.
func Run(ctx context.Context, handler sqsworker.Handler, message *sqsworker.Message, opts ...Option) Result {
	o := options{backoff: sqsworker.Backoff{Jitter: sqsworker.JitterNone}, deadLetter: true, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.receivedAt.IsZero() {
		o.receivedAt = o.now()
	}
	err := settle.Call(ctx, handler, message)
	outcome := sqsworker.Classify(err)
	action := settle.Plan(outcome, message, o.receivedAt, o.now(), o.backoff, o.deadLetter)
	return Result{
		Err:               err,
		Outcome:           outcome,
		Deleted:           action.Delete,
		DeadLettered:      action.DeadLetter,
		Visibility:        action.Visibility,
		VisibilitySeconds: action.Seconds(),
		Panicked:          sqsworker.IsPanicError(err),
	}
}

var messageCounter atomic.Int64

// NewMessage returns a message as a host hands it to a handler on its first receive:
// a unique ID and receipt handle, ReceiveCount 1, SentAt and FirstReceivedAt now, a
// test queue URL. Change its fields for other cases (a later receive, attributes).
func NewMessage(body string) *sqsworker.Message {
	n := strconv.FormatInt(messageCounter.Add(1), 10)
	now := time.Now()
	return &sqsworker.Message{
		ID:              "sqsworkertest-" + n,
		Body:            body,
		ReceiveCount:    1,
		SentAt:          now,
		FirstReceivedAt: now,
		QueueURL:        "https://sqs.us-east-1.amazonaws.com/000000000000/sqsworkertest",
		QueueARN:        "arn:aws:sqs:us-east-1:000000000000:sqsworkertest",
		ReceiptHandle:   "sqsworkertest-receipt-" + n,
		Attributes:      map[string]string{"ApproximateReceiveCount": "1"},
	}
}
