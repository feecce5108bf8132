package sqsworker

import (
	"context"
	"sync/atomic"
)

// Stats counts messages by what became of them on a host, since the counting began.
// Both hosts report them (poller.Server.Stats, lambda.BatchHandler.Stats); any program
// can count its own with a [Counter].
type Stats struct {
	// Received is the number of messages received.
	Received int64
	// InFlight is the number of messages held now: received and not yet settled
	// (deleted, rescheduled or released).
	InFlight int64
	// Deleted is the number of deletes confirmed (poller) or records reported as
	// successes (Lambda): messages handled successfully, or dead-lettered.
	Deleted int64
	// DeleteFailures is the number of messages whose delete failed for good; they will
	// be delivered again.
	DeleteFailures int64
	// Failed is the number of failed handler attempts (errors, panics, timeouts).
	Failed int64
	// Deferred is the number of messages deferred with [Defer].
	Deferred int64
	// DeadLettered is the number of messages sent to the dead-letter queue directly.
	DeadLettered int64
	// DeadLetterFailures is the number of dead-letter sends that failed (the message was
	// retried instead).
	DeadLetterFailures int64
	// RescheduleFailures is the number of failed visibility changes for a retry,
	// retry-after or deferral; the message then returns after its current visibility
	// timeout.
	RescheduleFailures int64
	// Released is the number of messages made visible again at once without being
	// handled to the end: at shutdown, behind a failed FIFO message, or not started
	// before a Lambda invocation's deadline.
	Released int64
	// HeartbeatFailures is the number of messages whose visibility heartbeat failed and
	// stopped.
	HeartbeatFailures int64
	// Abandoned is the number of handlers that did not return after their context
	// ended.
	Abandoned int64
}

// Counter is an [Observer] that counts events into [Stats]. The zero value is ready to
// use; it is safe for concurrent use.
type Counter struct {
	received, inFlight, deleted, deleteFailures, failed, deferred  atomic.Int64
	deadLettered, deadLetterFailures, rescheduleFailures, released atomic.Int64
	heartbeatFailures, abandoned                                   atomic.Int64
}

// Observe counts ev.
func (c *Counter) Observe(_ context.Context, ev Event) {
	switch ev.Kind {
	case EventReceived:
		c.received.Add(1)
		c.inFlight.Add(1)
	case EventFinished:
		if ev.Outcome.Failed() {
			c.failed.Add(1)
		}
		if ev.Outcome.Kind == OutcomeDefer {
			c.deferred.Add(1)
		}
	case EventHeartbeatFailed:
		c.heartbeatFailures.Add(1)
	case EventDeleted:
		c.deleted.Add(1)
		c.inFlight.Add(-1)
	case EventDeleteFailed:
		c.deleteFailures.Add(1)
		c.inFlight.Add(-1)
	case EventDeadLettered:
		c.deadLettered.Add(1)
	case EventDeadLetterFailed:
		c.deadLetterFailures.Add(1)
	case EventRescheduled:
		c.inFlight.Add(-1)
	case EventRescheduleFailed:
		c.rescheduleFailures.Add(1)
		c.inFlight.Add(-1)
	case EventReleased:
		c.released.Add(1)
		c.inFlight.Add(-1)
	case EventAbandoned:
		c.abandoned.Add(1)
	}
}

// Stats returns a snapshot of the counts.
func (c *Counter) Stats() Stats {
	return Stats{
		Received:           c.received.Load(),
		InFlight:           c.inFlight.Load(),
		Deleted:            c.deleted.Load(),
		DeleteFailures:     c.deleteFailures.Load(),
		Failed:             c.failed.Load(),
		Deferred:           c.deferred.Load(),
		DeadLettered:       c.deadLettered.Load(),
		DeadLetterFailures: c.deadLetterFailures.Load(),
		RescheduleFailures: c.rescheduleFailures.Load(),
		Released:           c.released.Load(),
		HeartbeatFailures:  c.heartbeatFailures.Load(),
		Abandoned:          c.abandoned.Load(),
	}
}
