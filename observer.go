package sqsworker

import (
	"context"
	"time"
)

// EventKind names a step in a message's life on a host.
type EventKind int

// The steps of a message's life, in the order a host reports them. Every received
// message's life ends in exactly one of Deleted, DeleteFailed, Rescheduled,
// RescheduleFailed or Released; DeadLettered comes before its Deleted, Abandoned before
// its Released.
const (
	// EventReceived: the host got the message (ReceiveMessage, or a record of a Lambda
	// event). ReceiveLag is the time since SQS accepted it.
	EventReceived EventKind = iota + 1
	// EventStarted: the handler was called.
	EventStarted
	// EventFinished: the handler returned (or panicked, or its context ended). Outcome
	// is Classify's decision; HandlerDuration the handler's run time; ReceiveLag the time
	// since SQS accepted the message.
	EventFinished
	// EventHeartbeatExtended: the message's visibility was extended while its handler
	// runs (poller). Visibility is the new timeout from now.
	EventHeartbeatExtended
	// EventHeartbeatFailed: a heartbeat failed and no more are sent for the message. Err
	// says why.
	EventHeartbeatFailed
	// EventDeleted: the message is gone from the queue. The poller reports it when SQS
	// confirmed the DeleteMessageBatch entry; the Lambda host when the record is left out
	// of batchItemFailures, after which the event source mapping deletes it.
	EventDeleted
	// EventDeleteFailed: the delete was not confirmed and will not be retried; the
	// message will be delivered again. Err says why.
	EventDeleteFailed
	// EventDeadLettered: the message was sent to the dead-letter queue (a permanent
	// failure); its delete follows. Outcome.Reason is the failure reason attribute.
	EventDeadLettered
	// EventDeadLetterFailed: the dead-letter send failed or is disabled; the message is
	// retried instead, and the redrive policy will move it. Err says why.
	EventDeadLetterFailed
	// EventRescheduled: the message will be visible again after Visibility (a retry,
	// retry-after or deferral); on Lambda it is also reported in batchItemFailures.
	EventRescheduled
	// EventRescheduleFailed: the visibility change failed; the message returns after its
	// current visibility timeout. Err says why.
	EventRescheduleFailed
	// EventReleased: the message was made visible again at once without being handled
	// to the end. Reason says why: shutdown, behind a failed FIFO message, not started
	// before the invocation's deadline.
	EventReleased
	// EventAbandoned: the handler did not return after its context ended; the host
	// stopped waiting for it and releases the message (EventReleased follows). The
	// handler's goroutine may still run.
	EventAbandoned
)

// EventKinds returns every kind a host reports, in order (for exporters that build one
// series per kind in advance, and for tests that walk them all).
func EventKinds() []EventKind {
	kinds := make([]EventKind, 0, int(EventAbandoned))
	for kind := EventReceived; kind <= EventAbandoned; kind++ {
		kinds = append(kinds, kind)
	}
	return kinds
}

// String returns the kind's name as used in logs and metrics ("received", ...).
func (k EventKind) String() string {
	switch k {
	case EventReceived:
		return "received"
	case EventStarted:
		return "started"
	case EventFinished:
		return "finished"
	case EventHeartbeatExtended:
		return "heartbeat-extended"
	case EventHeartbeatFailed:
		return "heartbeat-failed"
	case EventDeleted:
		return "deleted"
	case EventDeleteFailed:
		return "delete-failed"
	case EventDeadLettered:
		return "dead-lettered"
	case EventDeadLetterFailed:
		return "dead-letter-failed"
	case EventRescheduled:
		return "rescheduled"
	case EventRescheduleFailed:
		return "reschedule-failed"
	case EventReleased:
		return "released"
	case EventAbandoned:
		return "abandoned"
	}
	return "unknown"
}

// Event is one step of one message's life, as a host reports it to an [Observer].
// Fields that do not apply to the kind are zero.
type Event struct {
	Kind EventKind
	// Host is "poller" or "lambda".
	Host string
	// Message is the message the event is about. Observers must not change it.
	Message *Message
	// Time is when the step happened.
	Time time.Time
	// ReceiveLag is Time minus the message's SentAt (how long ago SQS accepted it), or 0
	// when SentAt is unknown.
	ReceiveLag time.Duration
	// Outcome is Classify's decision (EventFinished and the settling events after it).
	Outcome Outcome
	// HandlerDuration is how long the handler ran (EventFinished).
	HandlerDuration time.Duration
	// Visibility is the visibility timeout set from Time on (EventRescheduled,
	// EventHeartbeatExtended).
	Visibility time.Duration
	// Reason says why a message was released or abandoned.
	Reason string
	// Err is the failure of a failed step (EventHeartbeatFailed, EventDeleteFailed,
	// EventDeadLetterFailed, EventRescheduleFailed).
	Err error
}

// Observer is told about every step of every message's life on a host: metrics,
// tracing, logs of settlement, an operations page. Hosts call Observe synchronously on
// the goroutine that took the step, so it must be quick (hand slow work to a goroutine
// of its own), must not block, and must be safe for concurrent use. Observe must not
// keep ev.Message past the call unless it copies what it needs.
//
// A metrics exporter counts events by Kind and Outcome.Kind and records
// HandlerDuration and ReceiveLag as histograms; a tracer ends a span at
// EventFinished; neither needs a host change.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, ev Event)

// Observe calls f(ctx, ev).
func (f ObserverFunc) Observe(ctx context.Context, ev Event) { f(ctx, ev) }

// NopObserver ignores every event; hosts use it when no observer is configured.
var NopObserver Observer = nopObserver{}

type nopObserver struct{}

func (nopObserver) Observe(context.Context, Event) {}

// Observers combines observers into one that tells each, in order. Nil observers are
// skipped; with none left it returns NopObserver.
func Observers(observers ...Observer) Observer {
	var list multiObserver
	for _, o := range observers {
		switch o := o.(type) {
		case nil:
		case multiObserver:
			list = append(list, o...)
		default:
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

func (m multiObserver) Observe(ctx context.Context, ev Event) {
	for _, o := range m {
		o.Observe(ctx, ev)
	}
}
