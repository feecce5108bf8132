package lambda

import (
	"context"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker"
)

// budget plans the invocation's time from ctx.Deadline(): a record starts only while at
// least margin is left, and handlers' contexts end margin before the deadline. A handler
// that has not returned grace() after that is abandoned, so the rest of the margin is
// left for the settle calls, which end a reserve before the deadline (settleContext),
// and the response.
type budget struct {
	deadline    time.Time
	hasDeadline bool
	margin      time.Duration
}

func newBudget(ctx context.Context, margin time.Duration) budget {
	deadline, ok := ctx.Deadline()
	return budget{deadline: deadline, hasDeadline: ok, margin: margin}
}

// canStart reports whether a record may start now. A remaining time of zero or less never
// may, even with a zero margin: Lambda reads 0 ms left just before it kills the function.
func (b budget) canStart(now time.Time) bool {
	if !b.hasDeadline {
		return true
	}
	remaining := b.deadline.Sub(now)
	return remaining > 0 && remaining >= b.margin
}

// handlerContext derives the handlers' context from the invocation's: same values (the
// Lambda context included), cancelled margin before the invocation's deadline. An
// idempotency lease is never renewed past this deadline, so it ends when the handler's
// context does at the latest.
func (b budget) handlerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if !b.hasDeadline || b.margin == 0 {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, b.deadline.Add(-b.margin), ErrDeadline)
}

// ErrDeadline is the cause (context.Cause) of a handler context ended because the
// invocation's deadline, less the adapter's margin, came while the handler ran. It
// matches [sqsworker.ErrInterrupted]: the idempotency middleware records the receive as
// interrupted, so it is no attempt of the job ([sqsworker.Message.Attempt]).
var ErrDeadline = fmt.Errorf("lambda: the invocation's deadline (less the margin) reached (%w)", sqsworker.ErrInterrupted)

// grace is how long a handler whose context ended may take to return before it is
// abandoned: abandonGrace, or half the margin when that is less.
func (b budget) grace() time.Duration {
	return min(abandonGrace, b.margin/2)
}

// responseReserve is how much of the margin is kept after the settle calls for the
// response itself: the adapter builds it, aws-lambda-go posts it to the Runtime API.
// Lambda counts a response that arrives at the deadline as a timeout and retries the
// whole batch, so the settle calls end this long before the deadline, whatever SQS does.
const responseReserve = 250 * time.Millisecond

// settleContext derives the context of the invocation's settle calls (dead-letter sends,
// queue loads, visibility changes, deletes) from its own: same values, ended
// responseReserve (or a quarter of the margin, when less) before the invocation's
// deadline. A call cut short leaves its record failed, in batchItemFailures: it comes
// back after its visibility timeout instead of after the backoff delay.
func (b budget) settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if !b.hasDeadline || b.margin == 0 {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, b.deadline.Add(-min(responseReserve, b.margin/4)))
}
