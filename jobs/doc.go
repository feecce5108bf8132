// Package jobs keeps a record of each job, by its job id ([sqsworker.AttributeJobID],
// which package producer gives every job): its state, attempts, first and last start,
// last error, result and progress, and a cancellation request. Read it with
// [Store.Get] or `sqsworker jobs get ID`; cancel a job with [Store.Cancel] or
// `sqsworker jobs cancel ID`.
//
// # Where the record lives
//
// One item per job in the shared table (package table), under [table.JobRecordKey]
// ("job#" + the job id), with the table's TTL attribute: [Config.TTL] after its last
// write (7 days by default). Its size is bounded: the last error is cut at
// [MaxErrorBytes], progress is refused past [MaxProgressBytes] and the result past
// [MaxResultBytes], so the item stays far below DynamoDB's 400 KB item limit. A larger
// result, up to [MaxLargeResultBytes], is kept in S3 when [Config.LargeResults] is set
// (see [LargeResults]): the record holds its [ResultRef], and [Store.Result] reads it.
//
// Records are opt-in: a worker writes them when its handler is wrapped in
// [Store.Middleware]. What they cost, per attempt, in DynamoDB writes (see
// docs/benchmarks.md for the measured figures):
//
//   - the start: one UpdateItem (state running, attempts + 1, the start times). It is
//     conditioned on no cancellation request, so it is also the check that a job
//     cancelled before it started does not run: no read is added;
//   - the end: one UpdateItem (the final state, the last error, the result, and the
//     progress not yet written); a result kept in S3 adds one PutObject, in [SetResult];
//   - progress: at most one UpdateItem per [MiddlewareConfig.ProgressInterval] (5 s by
//     default), however often the handler calls [Progress];
//   - cancellation while running: one eventually consistent GetItem (a read) per
//     [MiddlewareConfig.CheckInterval] of run time; a job shorter than one interval
//     reads nothing.
//
// The producer writes nothing: a record exists from the job's first start (or from a
// cancellation), and [Store.Enqueue] lets a sender that wants the enqueued state
// record it, at the cost of one PutItem per job.
//
// # States
//
// [StateEnqueued] (recorded by Enqueue), [StateRunning], then [StateSucceeded],
// [StateRetrying] (the attempt failed; SQS delivers the job again),
// [StateInterrupted] (the attempt's context ended before the handler did: the host is
// shutting down, or a Lambda invocation's deadline came; SQS delivers it again),
// [StateDeadLettered] (a permanent failure: the host sends it to the dead-letter queue),
// [StateFailed] (its retries ran out: the attempt at [MiddlewareConfig.MaxReceiveCount]
// failed, and the host dead-letters it with reason RetriesExhausted) or
// [StateCancelled].
//
// # Cancellation
//
// [Store.Cancel] marks the record. A job not started yet is recorded as cancelled at
// once; when its message arrives, the start's conditional write fails, the handler does
// not run, and the host deletes the message with outcome [sqsworker.OutcomeCancelled].
// A running job's middleware sees the mark within one CheckInterval and cancels the
// handler's context (its cause matches [sqsworker.ErrCancelled]); when the handler then
// returns an error, whatever it is, the job ends as cancelled: deleted, neither retried
// nor dead-lettered. A handler that returns nil all the same has done its work, and the
// job ends as succeeded (an idempotency record inside completes, a batch counts it).
// Cancelling a finished job changes nothing and returns a [*FinishedError].
package jobs
