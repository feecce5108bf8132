// Package outbox enqueues jobs if and only if a business transaction commits: the
// transactional outbox pattern, for DynamoDB and PostgreSQL.
//
// A job is written as an outbox entry in the same transaction as the business data
// ([DynamoDB.TransactItems] for a TransactWriteItems call, [Postgres.Enqueue] inside a
// pgx.Tx). A relay publishes committed entries to SQS afterwards, through a
// [producer.Producer] (SendMessageBatch, size checks, claim check), and removes or marks
// them once SQS confirmed the send:
//
//   - [Relay], a container loop with the poller's lifecycle (New, Start, Shutdown, Run),
//     over a PostgreSQL table ([NewPostgresRelay]: FOR UPDATE SKIP LOCKED claims,
//     LISTEN/NOTIFY wake-ups, polling as the fallback) or a DynamoDB table's sparse index
//     of unpublished entries ([NewDynamoDBRelay]: a Query, never a Scan);
//   - [StreamHandler], a Lambda handler for the DynamoDB table's stream.
//
// Delivery is at least once. A relay that dies between the send and the mark sends the
// entry again; every entry carries a stable id, sent as the FIFO deduplication id, as
// the idempotency key (unless the job names its own) and as the [AttributeOutboxID]
// message attribute, so the consumer's idempotency middleware absorbs the repeat.
//
// An entry SQS refuses (too large without a claim check, an invalid attribute, a FIFO
// job without a group) is not retried: it is marked failed with the reason, reported as
// [EventFailed], and listed by [DynamoDB.Failed] and [Postgres.Failed]. The relay goes
// on with the rest. Relays report their backlog and lag (the age of the oldest
// unpublished entry) as [EventBacklog].
package outbox
