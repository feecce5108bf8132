package poller

import (
	"sync/atomic"

	"github.com/sqsworker/sqsworker"
)

// Stats is a snapshot of a [Server]'s counters since it was created. Counts are of
// messages (not calls) unless noted. The message counts are the embedded
// [sqsworker.Stats], those of a [sqsworker.Counter] over the events the server reports
// (Config.Observer sees the same), so a Lambda BatchHandler's Stats count alike. On the
// poller, Deleted counts only deletes SQS confirmed, and Abandoned counts handler calls
// still running a second after their context was cancelled (hard timeout or drain
// deadline), their message already settled (see Config.MaxAbandonedHandlers).
type Stats struct {
	sqsworker.Stats
	// ReceiveCalls is the number of ReceiveMessage calls made.
	ReceiveCalls int64
	// ReceiveErrors is the number of ReceiveMessage calls that failed.
	ReceiveErrors int64
	// AbandonedRunning is the number of abandoned handler calls still running now.
	AbandonedRunning int64
	// Tenants are the message counts per tenant (the message's GroupID: a fair queue's
	// tenant key, or a FIFO group), at most sqsworker.DefaultMaxTenants by name and the
	// rest under sqsworker.TenantOther; see [sqsworker.TenantCounter].
	Tenants []sqsworker.TenantStats
	// Slots holds, once the server has started, one entry per queue (Config.Queues, or
	// Config.QueueURL), in configuration order: how many Concurrency slots the queue
	// holds now. Nil before Start.
	Slots []QueueSlots
}

// QueueSlots is one queue's share of the Concurrency slots at the time of a [Stats]
// snapshot.
type QueueSlots struct {
	// QueueURL is the queue's URL.
	QueueURL string
	// Busy is how many slots the queue's messages hold: running, or waiting for a
	// handler turn or a job type's limit (received, not yet settled).
	Busy int
	// Receiving is how many slots the queue's ReceiveMessage calls in flight hold
	// (each asks for as many messages as it holds slots).
	Receiving int
	// MinSlots and MaxSlots are the queue's reservation and bound (QueueConfig); MaxSlots
	// is Concurrency (plus Prefetch) when the queue has no bound of its own.
	MinSlots, MaxSlots int
}

// counters holds the live values behind [Stats]: the receive calls here, the messages'
// fates in events, which counts what the server reports to its observer.
type counters struct {
	receiveCalls, receiveErrors, abandonedRunning atomic.Int64
	events                                        sqsworker.Counter
	tenants                                       sqsworker.TenantCounter
}

func (c *counters) snapshot() Stats {
	return Stats{
		Stats:            c.events.Stats(),
		ReceiveCalls:     c.receiveCalls.Load(),
		ReceiveErrors:    c.receiveErrors.Load(),
		AbandonedRunning: c.abandonedRunning.Load(),
		Tenants:          c.tenants.Tenants(),
	}
}
