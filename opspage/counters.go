package opspage

import "context"

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
