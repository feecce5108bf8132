package opspage

import (
	"context"
	"time"
)

// Counters is where the page reads how many messages the workers finished, per queue
// name, for the throughput and failure rate (Config.Counters). The values are
// ever-growing totals, summed over the workers, like Prometheus counters: the page
// computes the rates from their change between two polls, and takes a fall (a worker
// restarted and began again at zero) as a new start. The CLI's --metrics reads them
// from the workers' /metrics (the otelsqsworker Prometheus handler); a worker serving
// the page itself can count them with an observer. Finished is called once per poll,
// from the page's refresher goroutine, and is bounded by the poll's context.
type Counters interface {
	Finished(ctx context.Context) (map[string]Finished, error)
}

// Finished counts the handler calls that returned for one queue.
type Finished struct {
	// Total counts every outcome; Failed counts the failures: dead-lettered, or to be
	// retried (a deferral is neither a success nor a failure, and counts in Total only).
	Total, Failed float64
}

// Ages is where the page reads the age of each queue's oldest message (Config.Ages), for
// its chart: the CLI's --cloudwatch reads CloudWatch's ApproximateAgeOfOldestMessage,
// which SQS publishes once a minute. Without it the chart shows the page's own upper
// bound (the time since a poll saw the queue empty). OldestAge is called at most once
// per [AgeInterval] per queue, from the refresher's goroutine, bounded by the poll's
// context; it returns false when the age is not known (no datapoint yet).
type Ages interface {
	OldestAge(ctx context.Context, queueName string) (age time.Duration, known bool, err error)
}

// AgeInterval is how often the page asks Config.Ages for a queue's age: the resolution
// of SQS's CloudWatch metrics.
const AgeInterval = time.Minute
