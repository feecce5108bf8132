package scheduler

import (
	"context"
	"time"
)

// EventKind names what happened in a [Scheduler].
type EventKind int

// The scheduler's events. A replica's leadership is a sequence of LeadershipGained, the
// tick events of that term, and LeadershipLost.
const (
	// EventLeadershipGained: this replica took the lease. Token is its fencing token.
	EventLeadershipGained EventKind = iota + 1
	// EventLeadershipLost: this replica no longer holds the lease (Reason: "renewal
	// refused" when another replica holds it, "expired" when it could not renew in time,
	// "fenced" when a tick's claim was refused, "shutdown" when it released it). Err
	// carries the failure, if any.
	EventLeadershipLost
	// EventTickClaimed: the tick was recorded as claimed for a send under the lease (the
	// fenced write); its send follows. Attempt counts the claims of this tick: more than
	// 1 when it is sent again.
	EventTickClaimed
	// EventTickEnqueued: the tick's message was sent and the send recorded; the tick is
	// done. MessageID is the recorded send's SQS message id. Attempt is the number of
	// sends of the tick: more than 1 when an earlier send failed or was not recorded (a
	// lost response, a leader that died after sending), so an earlier copy may be on the
	// queue too (on a FIFO queue SQS drops a copy sent within its 5-minute
	// deduplication interval); the consumer's idempotency record, keyed by the tick id,
	// runs the handler once.
	EventTickEnqueued
	// EventTicksSkipped: Skipped missed ticks, from Tick to LastSkipped, were beyond the
	// schedule's CatchUp (see Schedule.CatchUp): none is enqueued.
	EventTicksSkipped
	// EventTickFailed: reading the schedule's state, or claiming, sending or recording
	// the tick failed (Err; one matching ErrMalformedItem names an item the scheduler did
	// not write). The schedule is tried again after a backoff (1 s, doubling up to
	// Config.RenewInterval, or up to 1 min for a malformed item) while this replica
	// leads; TickID is empty when no tick was reached.
	EventTickFailed
)

// String returns the kind's name as used in logs ("tick-enqueued", ...).
func (k EventKind) String() string {
	switch k {
	case EventLeadershipGained:
		return "leadership-gained"
	case EventLeadershipLost:
		return "leadership-lost"
	case EventTickClaimed:
		return "tick-claimed"
	case EventTickEnqueued:
		return "tick-enqueued"
	case EventTicksSkipped:
		return "ticks-skipped"
	case EventTickFailed:
		return "tick-failed"
	}
	return "unknown"
}

// Event is one step of a scheduler replica. Fields that do not apply are zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Owner is the replica (Config.Owner); Token its fencing token when it leads.
	Owner string
	Token int64
	// Schedule is the schedule's name; TickID and Tick the tick (scheduled time, UTC).
	Schedule string
	TickID   string
	Tick     time.Time
	// Queue is the queue URL of the tick's message; MessageID its SQS message id.
	Queue     string
	MessageID string
	// Attempt is how many times the tick was claimed for a send (EventTickClaimed,
	// EventTickEnqueued): 1 for its first send.
	Attempt int
	// Skipped is the number of ticks skipped (EventTicksSkipped), the last of them at
	// LastSkipped.
	Skipped     int64
	LastSkipped time.Time
	// Reason says why leadership was lost.
	Reason string
	// Time is when the step happened.
	Time time.Time
	// Err is the failure of a failed step.
	Err error
}

// Observer is told about every [Event] of a scheduler replica. It is called
// synchronously on the scheduler's goroutines, so it must be quick and safe for
// concurrent use. The method's name differs from sqsworker.Observer's Observe so one
// type can observe both the hosts and the scheduler.
type Observer interface {
	ObserveScheduler(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, ev Event)

// ObserveScheduler calls f(ctx, ev).
func (f ObserverFunc) ObserveScheduler(ctx context.Context, ev Event) { f(ctx, ev) }
