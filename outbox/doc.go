// Package outbox enqueues jobs if and only if a business transaction commits: the
// transactional outbox pattern, for DynamoDB and PostgreSQL.
//
// A job is written as an outbox entry in the same transaction as the business data
// (outboxdynamo.Outbox.TransactItems for a TransactWriteItems call, outboxpg.Outbox.Enqueue
// inside a pgx.Tx). A relay publishes committed entries to SQS afterwards, through a
// [producer.Producer] (SendMessageBatch, size checks, claim check), and removes or marks
// them once SQS confirmed the send, with several SendMessageBatch calls of a cycle in
// flight ([RelayConfig.InFlight]), never two of one FIFO message group:
//
//   - [Relay], a container loop with the poller's lifecycle (New, Start, Shutdown, Run),
//     over a PostgreSQL table (outboxpg.NewRelay: FOR UPDATE SKIP LOCKED claims,
//     LISTEN/NOTIFY wake-ups, polling as the fallback) or a DynamoDB table's sparse index
//     of unpublished entries (outboxdynamo.NewRelay: a Query, never a Scan, and a
//     conditional claim per entry);
//   - dynamostream.Handler, a Lambda handler for the DynamoDB table's stream: the fast path,
//     with a container relay sweeping behind it.
//
// This package holds what every store shares: the entry, the [Store] seam, the relay, the
// publish step ([Publish]) and the observer, and links no database driver. The DynamoDB
// store is package outbox/outboxdynamo, its stream handler
// outbox/outboxdynamo/dynamostream (the one that links aws-lambda-go); the PostgreSQL
// store is module github.com/sqsworker/sqsworker/outbox/outboxpg (the one that links
// pgx). A store of your own implements [Store] and passes the conformance suite of
// outbox/outboxtest.
//
// Delivery is at least once. A relay that dies between the send and the mark sends the
// entry again; every entry carries a stable id, sent as the FIFO deduplication id (unless
// the job sets DeduplicationID or UniqueKey), as the idempotency key (unless the job
// names its own) and as the [AttributeOutboxID] message attribute, so the consumer's
// idempotency middleware absorbs the repeat.
//
// An entry stores its job as [producer.Prepare] made it ([Entry.Job], in its versioned
// JSON form: one column or attribute), and the relay sends it with
// [producer.Producer.SendPreparedBatch], so every job option the producer knows goes
// through the outbox unchanged. A unique job's key is reserved when the relay sends it;
// a key already taken (a duplicate, or the relay's own earlier send) publishes the entry
// with the holder's message id and sends nothing. Entries written before the prepared
// form (pre-1.0) are not read: drain the outbox with the earlier release before
// upgrading (outboxpg.Migrate refuses an older table holding unpublished rows; on
// DynamoDB such an entry fails as [ErrDamaged]).

// # Failures: the relay goes on with the rest
//
// A send that fails on the network's, SQS's or the destination's side (a queue that
// does not exist, access denied, throttling) is an attempt: the entry records it
// ([Entry.Attempts], NextAttemptAt, LastError) and waits for its backoff
// (RelayConfig.Backoff) while the relay sends the other entries; after
// RelayConfig.MaxAttempts it is marked failed ([ErrAttemptsExhausted]). An entry that
// can never be sent is marked failed at once: one SQS or the producer refuses (too
// large without a claim check, an invalid attribute: [ErrRefused]) and one that cannot
// be decoded ([ErrDamaged]). Failed entries are reported as [EventFailed], listed by
// Failed, counted by Summary and by the relay's [EventBacklog], and released by Retry
// (send it again) or Skip (delete it), on both stores, and by the CLI (`sqsworker
// outbox list --failed`, `retry`, `skip`).
//
// A FIFO message group is published in order, so "goes on with the rest" holds across
// groups, not within one: while a group's earliest unpublished entry is claimed, waits
// for its next attempt or is failed, no later entry of the group is sent. A failed one
// parks the group ([ParkedGroup], listed by Parked and `sqsworker outbox list
// --parked`) until it is retried or skipped; other groups and queues go on.
package outbox
