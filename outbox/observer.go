package outbox

import (
	"context"
	"time"
)

// EventKind names what a relay reports.
type EventKind int

// The events of a relay.
const (
	// EventPublished: SQS confirmed the entry's message and the entry is removed (or
	// marked published). Entry and MessageID are set.
	EventPublished EventKind = iota + 1
	// EventFailed: the entry is marked failed with Err's text as its reason and is not
	// sent again unless retried: SQS refused it (Err wraps [ErrRefused]), it cannot be
	// decoded ([ErrDamaged]) or its attempts ran out ([ErrAttemptsExhausted]). A failed
	// entry of a FIFO message group (Entry.Ordered) parks its group. Entry and Err are
	// set.
	EventFailed
	// EventRetry: the entry was not published this time and stays unpublished: its send
	// failed (Entry.Attempts counts it, Entry.NextAttemptAt is its next attempt), or an
	// earlier entry of its FIFO group did not go out (no attempt counted). Entry and Err
	// are set.
	EventRetry
	// EventStoreError: reading, claiming or marking entries failed. Err is set. Entries
	// already sent but not marked are sent again later (and deduplicated downstream).
	EventStoreError
	// EventBacklog: the outbox's state, at most once per Config.ReportInterval: Backlog
	// is the number of unpublished entries, Lag the age of the oldest one (0 when none),
	// Failed the number of failed entries and Parked that of parked FIFO groups.
	EventBacklog
)

// String returns the kind's name as used in logs and metrics.
func (k EventKind) String() string {
	switch k {
	case EventPublished:
		return "published"
	case EventFailed:
		return "failed"
	case EventRetry:
		return "retry"
	case EventStoreError:
		return "store-error"
	case EventBacklog:
		return "backlog"
	}
	return "unknown"
}

// Event is one thing a relay reports to an [Observer]. Fields that do not apply to the
// kind are zero.
type Event struct {
	Kind EventKind
	// Store is "postgres", "dynamodb" or "dynamodb-stream".
	Store string
	// Time is when it happened.
	Time time.Time
	// Entry is the entry the event is about. Observers must not change it.
	Entry *Entry
	// MessageID is the SQS message id of a published entry.
	MessageID string
	// Backlog, Lag, Failed and Parked: see EventBacklog.
	Backlog int
	Lag     time.Duration
	Failed  int
	Parked  int
	// Err is the failure (EventFailed, EventRetry, EventStoreError).
	Err error
}

// Observer is told what a relay does: metrics (count events by Kind; gauge Backlog and
// Lag), logs, alerts on failed entries. Relays call ObserveOutbox synchronously from
// their own goroutine, so it must be quick and must not block; it must be safe for
// concurrent use when several relays share it. It is the relay's counterpart of
// [sqsworker.Observer]; its method has a name of its own so that one value can observe
// the hosts, the outbox, the idempotency middleware and the scheduler alike.
type Observer interface {
	ObserveOutbox(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, ev Event)

// ObserveOutbox calls f(ctx, ev).
func (f ObserverFunc) ObserveOutbox(ctx context.Context, ev Event) { f(ctx, ev) }

type nopObserver struct{}

func (nopObserver) ObserveOutbox(context.Context, Event) {}
