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
	// Heartbeats is the number of visibility extensions of held messages (poller).
	Heartbeats int64
	// HeartbeatFailures is the number of messages whose visibility heartbeat failed and
	// stopped.
	HeartbeatFailures int64
	// Abandoned is the number of handlers that did not return after their context
	// ended.
	Abandoned int64
}

// Count names one of the counts kept over a host's events: the fields of [Stats], and
// the counts of every exporter (OpenTelemetry metrics, EMF).
type Count int

// The counts, each a field of [Stats] of the same name.
const (
	CountReceived Count = iota
	CountInFlight
	CountDeleted
	CountDeleteFailures
	CountFailed
	CountDeferred
	CountDeadLettered
	CountDeadLetterFailures
	CountRescheduleFailures
	CountReleased
	CountHeartbeats
	CountHeartbeatFailures
	CountAbandoned
	// NumCounts is the number of counts (the length of a [Tally]).
	NumCounts
)

// CountMetric is how exporters show a count as a metric of its own: the OpenTelemetry
// instrument's name, unit (UCUM) and description, and whether it can go down. A count
// with no Name has no metric of its own: exporters show it another way (failed and
// deferred handler calls are sqsworker.messages.finished by outcome).
type CountMetric struct {
	Name, Unit, Description string
	// UpDown is true for a count that also goes down (in flight): an up-down counter,
	// not a counter.
	UpDown bool
}

// countMetrics is every count's metric, the one place exporters read it from.
var countMetrics = [NumCounts]CountMetric{
	CountReceived:           {"sqsworker.messages.received", "{message}", "Messages received.", false},
	CountInFlight:           {"sqsworker.messages.in_flight", "{message}", "Messages received and not yet settled.", true},
	CountDeleted:            {"sqsworker.deletes", "{message}", "Messages deleted (or reported as successes on Lambda).", false},
	CountDeleteFailures:     {"sqsworker.delete.failures", "{message}", "Deletes that failed for good; the message is delivered again.", false},
	CountFailed:             {},
	CountDeferred:           {},
	CountDeadLettered:       {"sqsworker.dead_letter.sends", "{message}", "Messages sent to the dead-letter queue.", false},
	CountDeadLetterFailures: {"sqsworker.dead_letter.send_failures", "{message}", "Dead-letter sends that failed or are disabled; the message is retried.", false},
	CountRescheduleFailures: {"sqsworker.reschedule.failures", "{message}", "Visibility changes for a retry that failed.", false},
	CountReleased:           {"sqsworker.messages.released", "{message}", "Messages made visible again without being handled to the end.", false},
	CountHeartbeats:         {"sqsworker.heartbeats", "{heartbeat}", "Visibility extensions of held messages.", false},
	CountHeartbeatFailures:  {"sqsworker.heartbeat.failures", "{heartbeat}", "Heartbeats that failed for good.", false},
	CountAbandoned:          {"sqsworker.handlers.abandoned", "{handler}", "Handlers that did not return after their context ended.", false},
}

// Metric returns how exporters show c (the zero CountMetric for a value that is not a
// count). The OpenTelemetry metrics build one instrument per count with a Name from it,
// so a new count shows there without a change to them.
func (c Count) Metric() CountMetric {
	if c < 0 || c >= NumCounts {
		return CountMetric{}
	}
	return countMetrics[c]
}

// Tally is what one event changes in each count: Tally[c] is added to count c. It is
// the one place an event's meaning for counting is decided; [Counter], the
// OpenTelemetry metrics and the EMF recorder all add an event's Tally.
type Tally [NumCounts]int64

// Tally returns what ev changes in each count: a received message is in flight until
// its life ends (deleted, delete failed, rescheduled, reschedule failed or released); a
// finished handler counts as failed when its outcome is ([Outcome.Failed]) and as
// deferred when it was deferred.
func (ev Event) Tally() (t Tally) {
	switch ev.Kind {
	case EventReceived:
		t[CountReceived], t[CountInFlight] = 1, 1
	case EventFinished:
		if ev.Outcome.Failed() {
			t[CountFailed] = 1
		}
		if ev.Outcome.Kind == OutcomeDefer {
			t[CountDeferred] = 1
		}
	case EventHeartbeatExtended:
		t[CountHeartbeats] = 1
	case EventHeartbeatFailed:
		t[CountHeartbeatFailures] = 1
	case EventDeleted:
		t[CountDeleted], t[CountInFlight] = 1, -1
	case EventDeleteFailed:
		t[CountDeleteFailures], t[CountInFlight] = 1, -1
	case EventDeadLettered:
		t[CountDeadLettered] = 1
	case EventDeadLetterFailed:
		t[CountDeadLetterFailures] = 1
	case EventRescheduled:
		t[CountInFlight] = -1
	case EventRescheduleFailed:
		t[CountRescheduleFailures], t[CountInFlight] = 1, -1
	case EventReleased:
		t[CountReleased], t[CountInFlight] = 1, -1
	case EventAbandoned:
		t[CountAbandoned] = 1
	}
	return t
}

// Counter is an [Observer] that counts events into [Stats]. The zero value is ready to
// use; it is safe for concurrent use.
type Counter struct {
	counts [NumCounts]atomic.Int64
}

// Observe counts ev: it adds ev.Tally().
func (c *Counter) Observe(_ context.Context, ev Event) {
	for count, delta := range ev.Tally() {
		if delta != 0 {
			c.counts[count].Add(delta)
		}
	}
}

// Stats returns a snapshot of the counts.
func (c *Counter) Stats() Stats {
	var t Tally
	for count := range t {
		t[count] = c.counts[count].Load()
	}
	return t.Stats()
}

// Stats returns the counts of t as [Stats]: each field its count of the same name.
func (t Tally) Stats() Stats {
	return Stats{
		Received:           t[CountReceived],
		InFlight:           t[CountInFlight],
		Deleted:            t[CountDeleted],
		DeleteFailures:     t[CountDeleteFailures],
		Failed:             t[CountFailed],
		Deferred:           t[CountDeferred],
		DeadLettered:       t[CountDeadLettered],
		DeadLetterFailures: t[CountDeadLetterFailures],
		RescheduleFailures: t[CountRescheduleFailures],
		Released:           t[CountReleased],
		Heartbeats:         t[CountHeartbeats],
		HeartbeatFailures:  t[CountHeartbeatFailures],
		Abandoned:          t[CountAbandoned],
	}
}
