package sqsworker

import (
	"context"
	"maps"
	"strings"
	"time"
)

// ReasonNotDue is the [DeferError] reason of a job deferred because its due time
// ([AttributeDueAt]) is still ahead.
const ReasonNotDue = "NotDue"

// Hopper sends a job that is not due yet again to its queue: the send side of a delay
// longer than one SQS DelaySeconds (15 minutes). *producer.Producer satisfies it.
type Hopper interface {
	// Hop sends message again to its queue, body and attributes unchanged, with a delay
	// of remaining or less (a hop is at most 15 minutes; the producer's at most its
	// Config.MaxHop), and returns nil only after SQS confirmed the send.
	Hop(ctx context.Context, message *Message, remaining time.Duration) error
}

// DelayOption configures [DelayMiddleware].
type DelayOption func(*delay)

// DelayDueAtHorizon sets how far ahead a message's due time may lie before
// [DelayMiddleware] fails it permanently with reason [ReasonDueAtTooFar]; if zero or
// less, [DefaultDueAtHorizon] (365 days). Give producers (producer.Config.DueAtHorizon)
// and workers of one queue the same horizon.
func DelayDueAtHorizon(d time.Duration) DelayOption {
	return func(config *delay) { config.horizon = d }
}

// delay is the configuration of a [DelayMiddleware].
type delay struct {
	hopper  Hopper
	horizon time.Duration
	now     func() time.Time
}

// DelayMiddleware is the consumer side of delays longer than one hop (SQS's 15-minute
// DelaySeconds limit). A message whose [AttributeDueAt] is still ahead is not handed to
// the handler: hopper sends it again to its queue, body and attributes unchanged, with
// the rest of its delay (at most one hop), and the middleware returns nil only after
// that send was confirmed, so the host deletes the original only then. A failed re-send
// is an ordinary failure (the host retries the original). Each hop is a new message
// whose receive count starts again, so waiting never counts toward the redrive policy's
// maxReceiveCount. A due message is handed on without the due-at attribute. The due time
// is the producer's clock plus the delay, compared with the worker's clock: clock skew
// between the two shifts the run by as much.
//
// A due time further ahead than the horizon ([DelayDueAtHorizon], 365 days by default),
// or a due-at attribute that is not a positive integer of milliseconds, is a permanent
// failure with reason [ReasonDueAtTooFar] or [ReasonMalformedDueAt] (see
// [Message.DueIn]): the host dead-letters the job after that one receive, and it does
// not hop. Without the bound, a chain of hops would never end (each hop is a new
// message: the retention period and the receive count start again).
//
// Put it outermost, before idempotency (each hop has a new message id) and before a
// claim-check resolver (a hop re-sends the pointer, not the payload). A crash between
// the re-send and the delete leaves two copies of the job (SQS's at-least-once): the
// idempotency middleware with the job's idempotency key suppresses the second. On a
// FIFO queue (which takes no per-message delay) a not-due message is deferred through
// its visibility timeout instead, with reason [ReasonNotDue], as [ServeMux] defers one
// when no middleware hopped it. It panics when hopper is nil.
func DelayMiddleware(hopper Hopper, options ...DelayOption) Middleware {
	if hopper == nil {
		panic("sqsworker: DelayMiddleware with a nil Hopper")
	}
	config := &delay{hopper: hopper, now: time.Now}
	for _, option := range options {
		option(config)
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, message *Message) error {
			if _, ok := message.MessageAttributes[AttributeDueAt]; !ok {
				return next.Handle(ctx, message)
			}
			remaining, err := notDue(message, config.now(), config.horizon)
			switch {
			case err == nil:
				return next.Handle(ctx, withoutDueAt(message))
			case remaining > 0 && !strings.HasSuffix(message.QueueURL, ".fifo"): // SQS's FIFO queue names end so, no other may
				return config.hopper.Hop(ctx, message, remaining)
			}
			return err // deferred on a FIFO queue (the host clamps it to the visibility limit), or refused
		})
	}
}

// notDue is the consumer side's one due-time decision, for [DelayMiddleware] and
// [ServeMux]: nil when message is due at now (or carries no due time); otherwise what a
// consumer that does not hop returns, with the time the job still has to wait: the
// deferral until it is due (reason [ReasonNotDue]), or the permanent failure of a due
// time too far ahead or malformed (remaining 0).
func notDue(message *Message, now time.Time, horizon time.Duration) (remaining time.Duration, err error) {
	remaining, err = message.DueIn(now, horizon)
	if err == nil && remaining > 0 {
		err = Defer(remaining, ReasonNotDue)
	}
	return remaining, err
}

// withoutDueAt returns a copy of message without the due-at attribute.
func withoutDueAt(message *Message) *Message {
	copied := *message
	copied.MessageAttributes = maps.Clone(message.MessageAttributes)
	delete(copied.MessageAttributes, AttributeDueAt)
	return &copied
}
