// Package producer sends jobs to SQS queues: one at a time ([Producer.Send]), in
// explicit batches ([Producer.SendBatch]), or through an automatic batcher that merges
// concurrent sends into SendMessageBatch calls ([Batcher]).
//
// A [Job] has a type (the job-type message attribute a sqsworker.ServeMux routes on) and
// a JSON payload or a raw body. Options cover delays up to a year (Config.DueAtHorizon;
// up to 15 minutes through DelaySeconds, longer through hops re-sent by
// sqsworker.DelayMiddleware on the consumer side through [Producer.Hop]), idempotency keys (the attribute the idempotency middleware reads by
// default), message groups (FIFO groups, or tenant keys of fair standard queues),
// deduplication ids and unique jobs ([DynamoDBUniqueStore] on standard queues, the
// deduplication id on FIFO queues). Every message is measured as SQS measures it (body
// plus attributes) against the queue's MaximumMessageSize, read once per queue; a larger
// one fails with [*TooLargeError] unless a [PayloadStore] (claim check) takes its body.
// A queue is FIFO when its URL ends in ".fifo", as SQS requires of FIFO queue names.
//
//	jobs, err := producer.New(sqs.NewFromConfig(awsConfig), producer.Config{})
//	id, err := jobs.Send(ctx, queueURL, producer.Job{Type: "welcome-email", Payload: WelcomeEmail{To: "ada@example.com"}})
//
// On the consumer side, sqsworker.DelayMiddleware goes outermost (a hop re-sends the message as it
// came: before a claim-check resolver, and before idempotency, since each hop has a new
// message id), the mux innermost:
//
//	handler := sqsworker.Chain(mux, sqsworker.DelayMiddleware(jobs), idempotency.Middleware(store, idempotency.Config{}))
//
// # Prepared jobs
//
// [Prepare] checks a job for its queue and encodes it into a [Prepared] without calling
// any service; [Producer.SendPrepared] and [Producer.SendPreparedBatch] send it later,
// through the same code as Send (trace context, delay hops, size check and claim check,
// unique keys, batching). Its JSON form is stable and versioned ([PreparedVersion]):
// package outbox stores it as it is, and the scheduler and the CLI send through it, so
// a new Job option changes this package only.
//
// # Unique jobs
//
// A job with a UniqueKey is sent once while its key is taken: another Send of the key
// returns a [*DuplicateJobError] with the first job's message id. On a standard queue the
// key is an item of the shared DynamoDB table (package table; key "unique#" + the key,
// see [DynamoDBUniqueStore]), taken for the job's window (Job.UniqueFor, at least 1 s and
// longer than the job's delay); Job.UniqueMode says whether it is freed earlier: when the
// job is done or has started, by [UniqueMiddleware] on the consumer side
// ([UniqueUntilDone], [UniqueUntilStarted]). An expired key counts as absent at once,
// whether or not DynamoDB's TTL has deleted it. Uniqueness is checked only when a job is
// sent: a redelivered or redriven message is never refused as a duplicate of itself. An
// item under the key that is not a unique key's item fails the Send
// ([ErrMalformedUniqueItem]); nothing is sent. On a FIFO queue the key is the
// deduplication id (SQS's 5-minute interval).
package producer
