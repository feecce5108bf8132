// Package batches groups jobs into batches with completion callbacks, as Sidekiq Pro's
// and GoodJob's batches do: a success callback when every job of the batch has
// succeeded, and a complete callback when every job has finished and some did not
// succeed.
//
//	b, err := batches.New(dynamodbClient, jobs, batches.Config{Table: "sqsworker"})
//	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: url, Job: producer.Job{Type: "zip-pages", Payload: order}}})
//	ids, err := batch.Add(ctx, url, pages...)
//	err = batch.Seal(ctx)
//
// and on the worker, inside sqsworker.DelayMiddleware and outside the idempotency
// middleware, whose records are kept as long as the batches' (so each success is
// counted with its record's completion, see the cost below):
//
//	handler := sqsworker.Chain(mux, sqsworker.DelayMiddleware(jobs), b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: 5}),
//		idempotency.Middleware(store, idempotency.Config{TTL: batches.DefaultRetention}))
//
// # Semantics
//
//   - A job ends once: success, or an end without success (a permanent failure, its
//     last attempt failed, or it was cancelled). A failed attempt that will be retried
//     is no end, so a job that failed and then succeeded on a retry counts once, as
//     succeeded; a duplicate delivery counts nothing.
//   - A job that ended without success and is later redriven and succeeds moves to
//     succeeded. If the complete callback fired already and now every job has
//     succeeded, the success callback fires after it.
//   - [Batch.Add] raises the counts before it sends: a job that adds children to its own
//     batch ([FromContext]) before it returns keeps the batch open until they end.
//   - A batch finishes only once sealed ([Batch.Seal]); sealing an empty batch, or one
//     whose jobs have all ended, fires its callback at once. After Seal only the batch's
//     own jobs may add to it: an Add from outside is refused ([ErrSealed]) in the same
//     transaction as its count, so no job is counted after the batch's callback was
//     decided.
//   - Each callback is sent at most once (its unique key is derived from the batch id;
//     the producer must enforce unique keys, see [Sender]) and at least once: a failed
//     send fails the job's end, so the job is retried and checks again.
//
// # Items
//
// In the shared table (package table), all under [table.Batches]: the batch item
// ([table.BatchKey]: its token, shard count, sealed flag, callbacks as
// producer.Prepared JSON, the times they fired), Config.Shards counter items
// ([table.BatchShardKey]: added, pending, succeeded, dead-lettered) and one marker per
// ended job ([table.BatchJobKey]: its end), unless the job's completed idempotency
// record marks its success (see the cost below). A job's message names its batch in the
// [AttributeBatch] attribute, which the middleware parses strictly (a ULID, a 128-bit
// token, a shard count) and which chooses no item outside the batch's own: keys are
// built with package table only. Every count is conditioned on the shard's token, so a
// message naming a batch it was not added to changes nothing ([ErrRefused]).
//
// Every item has the table's TTL attribute; expiry is checked in code (a batch past
// Config.Retention is not found, its counts refused), never left to TTL's deletion.
//
// # Cost per job (DynamoDB)
//
//   - Add: one consistent GetItem of the batch item (refusing a finished batch, and a
//     sealed one from outside its jobs), then from outside one TransactWriteItems: a
//     check that the batch is not sealed and the shards the jobs fall on (2 write units
//     per shard); from a batch job one UpdateItem when its jobs fall on one shard, else
//     one TransactWriteItems over those shards. Add many jobs per call and this share is
//     small.
//   - The job's success, with the idempotency middleware inside on DynamoDB and its
//     records kept at least Config.Retention (idempotency.Config.TTL): counted in the
//     transaction that completes the job's idempotency record (three actions: the
//     completion, the shard's counts, a check that the job has no marker), so the
//     completed record is the job's mark and a duplicate the record answers counts
//     nothing. One item write more than the completion alone; DynamoDB bills 2 write
//     units per item of a transaction, 4 in all where the completion alone is 1, and the
//     check as a read. No marker is written.
//   - Any other end (a dead letter; a success without that idempotency middleware, or
//     with records kept less than the retention, which could not stand for the count
//     once expired): one TransactWriteItems of two items, the job's marker (put if
//     absent) and its shard's counts, so a duplicate end changes nothing: 4 write units.
//     Under the idempotency middleware the transaction also checks that the job's record
//     is not completed (a job whose success was counted with its completion is not
//     counted again by a copy that fails, for example on its payload hash).
//   - Then one strongly consistent GetItem of the shard (1 read unit); when that shard
//     has no pending job, the full check: a GetItem of the batch item and one
//     TransactGetItems of it and every shard, so that all are read as of one instant
//     (2 read units an item).
//   - The callbacks: one SendMessage (and the producer's unique-key writes) and one
//     UpdateItem each, once per batch.
//
// docs/benchmarks.md has the measured figures.
//
// # Scale: shards
//
// DynamoDB allows one partition key 1,000 write units per second. A batch of 100,000
// jobs ending at 2,000 jobs/s on one counter item would ask 2,000 × 2 = 4,000 write
// units/s of it (each end writes the counter in a transaction), four times the limit.
// With Shards = N, a job's end writes shard FNV-1a(job id) mod N, so each shard takes
// about 2,000 / N ends/s, 4,000 / N write units/s: N = 4 reaches the limit exactly,
// N = 8 leaves half of it (ids hash evenly: the largest of 8 shards of 100,000 jobs is
// within a few percent of 12,500). The markers have a key per job and spread over
// partitions. The shard read after each end is 2,000 / N strongly consistent reads/s of
// a key, under its 3,000 read units/s. Choose N = ceil(2 × peak ends/s / 500) for a
// half-used limit; N is fixed when a batch is opened (at most [MaxShards]).
package batches
