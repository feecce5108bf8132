package opspage

import (
	"time"

	"github.com/sqsworker/sqsworker/redrive"
)

// Snapshot is what the [Refresher] read in its last poll; pages render from it.
type Snapshot struct {
	// At is when the poll ended (zero before the first one).
	At time.Time `json:"at"`
	// Queues are the configured queues, in the order given.
	Queues []QueueSnapshot `json:"queues"`
	// MetricsError is the last scrape's error, "" when it worked or no metrics URL is set.
	MetricsError string `json:"metrics_error,omitempty"`
}

// QueueSnapshot is one queue's counts, as GetQueueAttributes reports them
// (approximate), and its dead-letter queue's.
type QueueSnapshot struct {
	// Name, URL and ARN name the queue; FIFO is true for a FIFO queue.
	Name string `json:"name"`
	URL  string `json:"url"`
	ARN  string `json:"arn"`
	FIFO bool   `json:"fifo"`
	// Visible, InFlight and Delayed are ApproximateNumberOfMessages,
	// ApproximateNumberOfMessagesNotVisible and ApproximateNumberOfMessagesDelayed.
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
	// MaxReceiveCount is the redrive policy's maxReceiveCount, 0 without a policy.
	MaxReceiveCount int `json:"max_receive_count,omitempty"`
	// DLQ is the redrive policy's dead-letter queue, nil without a policy.
	DLQ *DLQSnapshot `json:"dlq,omitempty"`
	// Rates are the throughput and failure rate since the previous poll.
	Rates Rates `json:"rates"`
	// Error is why the queue could not be read this time ("" when it was).
	Error string `json:"error,omitempty"`
	// AgeError is why Config.Ages could not tell the oldest message's age, at its last
	// read ("" when it could, or without Ages).
	AgeError string `json:"age_error,omitempty"`
}

// DLQSnapshot is a dead-letter queue's counts and its recent native move tasks.
type DLQSnapshot struct {
	// Name, URL and ARN name the dead-letter queue (ARN from the redrive policy).
	Name string `json:"name"`
	URL  string `json:"url"`
	ARN  string `json:"arn"`
	// Visible, InFlight and Delayed are its approximate counts, as for QueueSnapshot.
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
	// Depth is Visible + InFlight + Delayed.
	Depth int `json:"depth"`
	// Retention is the MessageRetentionPeriod.
	Retention time.Duration `json:"retention"`
	// MoveTasks are ListMessageMoveTasks' answer, newest first (at most 10).
	MoveTasks []redrive.MoveTask `json:"move_tasks,omitempty"`
	// Error is why the queue or its move tasks could not be read ("" when they were).
	Error string `json:"error,omitempty"`
}

// The sources of [Rates].
const (
	// RatesFromMetrics: from the workers' sqsworker_messages_finished_total counters.
	RatesFromMetrics = "metrics"
	// RatesFromSQS: from the change of the SQS counts between two polls.
	RatesFromSQS = "sqs"
)

// Rates are a queue's throughput and failure rate over the last poll interval.
type Rates struct {
	// Known is false until two polls (or two scrapes) are there to compare.
	Known bool `json:"known"`
	// Source is RatesFromMetrics or RatesFromSQS.
	Source string `json:"source"`
	// PerSecond is, from metrics, the handler calls that returned per second; from SQS,
	// the net drain (the fall of visible + in flight + delayed per second, 0 when the
	// queue grows): a lower bound of the throughput, since sends are not counted.
	PerSecond float64 `json:"per_second"`
	// Failure is, from metrics, the fraction (0 to 1) of those calls that failed
	// (dead-letter, retry, retry-after); from SQS, dead letters per minute (the rise of
	// the dead-letter queue's depth).
	Failure float64 `json:"failure"`
}

// Queue returns the snapshot of the configured queue named name.
func (s Snapshot) Queue(name string) (QueueSnapshot, bool) {
	for _, q := range s.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return QueueSnapshot{}, false
}
