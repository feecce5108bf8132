// Package outboxpg is the PostgreSQL store of the transactional outbox (package
// outbox), a module of its own so that only its users link pgx: entries written inside
// the caller's pgx transaction ([Outbox.Enqueue]) into the sqsworker_outbox table
// ([Migrate], [Schema]), the relay over that table ([NewRelay], or [NewStore] for
// outbox.NewRelay), and the operator's listings and actions ([Outbox.Failed],
// [Outbox.Parked], [Outbox.Summary], [Outbox.Retry], [Outbox.Skip]). It passes the
// conformance suite of outbox/outboxtest.
//
// # FIFO order on PostgreSQL: commit order, by a per-group lock
//
// A relay sends a group's rows in seq order, and a row only when no earlier row of its
// group is unpublished. seq is taken when a row is inserted, but a row is visible only
// when its transaction commits: a row inserted first and committed later would be
// invisible when the relay sends the row behind it. PostgreSQL event stores meet the
// same gap three ways:
//
//   - gap detection (Marten's high-water mark, Eventuous' gap handling): readers wait
//     for a missing sequence number, then skip it after a timeout. A slow transaction
//     and a rolled-back one look alike, so the timeout either stalls readers or skips a
//     row that commits later (Marten 9.16.1 fixed several such skips);
//   - a transaction-id horizon (pg_current_xact_id() stored with the row, read only
//     below pg_snapshot_xmin(pg_current_snapshot())): exact, free for writers, but any
//     long write transaction in the cluster, related or not, stops every reader, and
//     the resulting order is the order of transaction ids, not of commits;
//   - a lock taken by the writer for what must be ordered (message-db's
//     pg_advisory_xact_lock per category): writers of one group take turns, so the
//     group's seq order is its commit order, and nothing else waits.
//
// The outbox takes the third: [Outbox.Enqueue] takes pg_advisory_xact_lock on each
// FIFO group it writes into, in the same round trip as the inserts. Its cost falls only
// on concurrent transactions writing into one group, which wait for each other's
// commit (measured: no difference beyond noise for a transaction in a group of its own,
// BenchmarkEnqueue); relays, other groups and standard queues never wait. On
// DynamoDB, a group's order is its entries' creation order (the writer's clock).
package outboxpg
