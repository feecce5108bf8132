// Package producer sends jobs to SQS queues: one at a time, in explicit batches, or
// through an automatic batcher that merges concurrent sends into SendMessageBatch calls.
//
// A job has a type (the job-type message attribute a [sqsworker.ServeMux] routes on) and
// a JSON payload or a raw body. Options cover delays of any length (up to 15 minutes
// through DelaySeconds, longer through hops re-sent by [Producer.DelayMiddleware] on the
// consumer side), idempotency keys, message groups (FIFO groups, or tenant keys of fair
// standard queues), deduplication ids and unique jobs (a DynamoDB conditional write).
// Every message is measured as SQS measures it, against the queue's MaximumMessageSize.
package producer
