package poller

import (
	"sync/atomic"

	"github.com/sqsworker/sqsworker"
)

// Stats is a snapshot of a [Server]'s counters since it was created. Counts are of
// messages (not calls) unless noted. The message counts are those of a
// [sqsworker.Counter] over the events the server reports (Config.Observer sees the
// same), so a Lambda BatchHandler's Stats count alike.
type Stats struct {
	// ReceiveCalls is the number of ReceiveMessage calls made.
	ReceiveCalls int64
	// ReceiveErrors is the number of ReceiveMessage calls that failed.
	ReceiveErrors int64
	// Received is the number of messages ReceiveMessage returned.
	Received int64
	// InFlight is the number of messages held now: received and not yet settled
	// (deleted, its delete given up, rescheduled or released).
	InFlight int64
	// Deleted is the number of deletes SQS confirmed: messages handled successfully, or
	// dead-lettered. A message counts only once its delete is confirmed.
	Deleted int64
	// DeleteFailures is the number of messages whose delete failed for good (a sender
	// fault, or retries until the receipt handle expired); they will be delivered again.
	DeleteFailures int64
	// Failed is the number of failed handler attempts (errors, panics, timeouts).
	Failed int64
	// Deferred is the number of messages deferred with [sqsworker.Defer].
	Deferred int64
	// DeadLettered is the number of messages sent to the dead-letter queue directly.
	DeadLettered int64
	// RescheduleFailures is the number of failed ChangeMessageVisibility calls for a
	// retry, retry-after or deferral; the message then returns after its current
	// visibility timeout.
	RescheduleFailures int64
	// Released is the number of messages made visible again at once (visibility 0)
	// without being handled to the end: at shutdown, or behind a failed FIFO message.
	Released int64
	// HeartbeatFailures is the number of messages whose visibility heartbeat failed and
	// stopped.
	HeartbeatFailures int64
	// AbandonedHandlers is the number of handler calls abandoned: still running a second
	// after their context was cancelled (hard timeout or drain deadline), their message
	// already settled. See Config.MaxAbandonedHandlers.
	AbandonedHandlers int64
	// AbandonedRunning is the number of abandoned handler calls still running now.
	AbandonedRunning int64
}

// counters holds the live values behind [Stats]: the receive calls here, the messages'
// fates in events, which counts what the server reports to its observer.
type counters struct {
	receiveCalls, receiveErrors, abandonedRunning atomic.Int64
	events                                        sqsworker.Counter
}

func (c *counters) snapshot() Stats {
	events := c.events.Stats()
	return Stats{
		ReceiveCalls:       c.receiveCalls.Load(),
		ReceiveErrors:      c.receiveErrors.Load(),
		Received:           events.Received,
		InFlight:           events.InFlight,
		Deleted:            events.Deleted,
		DeleteFailures:     events.DeleteFailures,
		Failed:             events.Failed,
		Deferred:           events.Deferred,
		DeadLettered:       events.DeadLettered,
		RescheduleFailures: events.RescheduleFailures,
		Released:           events.Released,
		HeartbeatFailures:  events.HeartbeatFailures,
		AbandonedHandlers:  events.Abandoned,
		AbandonedRunning:   c.abandonedRunning.Load(),
	}
}
