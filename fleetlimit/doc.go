// Package fleetlimit holds limits shared by every worker of a fleet: at most n handlers
// of one key (a tenant, an API) running at once, and at most r handler starts of one
// key per second, whichever worker runs them. Its state lives in the shared DynamoDB
// table (package table, namespace [table.Limits]): every change is one conditional
// write whose condition is the decision, so two workers never both take what only one
// may have (no read comes before a write: no check-then-act race).
//
// # Permits
//
// A key's Config.Concurrency permits are slots of one item (or of ceil(n/16) items,
// [SlotsPerItem] each: shards), each slot a lease: its holder, its end (epoch
// milliseconds), and the item's fencing counter, which grows with every permit taken.
// [Limiter.Acquire] writes one slot on the condition that it is empty or its lease has
// ended; a failed write returns the item (ReturnValuesOnConditionCheckFailure, which
// DynamoDB charges no read capacity for), which shows the free slots to try next. The
// holder renews its lease every Config.Lease/3 while the handler runs and releases it
// when the handler returns, each a write conditioned on the slot still being its own. A
// worker that crashes (SIGKILL, a lost host) leaves leases that end at most one Lease
// after its last renewal; the next Acquire takes them. A handler whose renewals failed
// until its lease was nearly over, or whose slot was taken, has its context cancelled
// with [ErrPermitLost]; the fencing token ([Permit].Token, [PermitFromContext]) lets a
// downstream refuse a holder that had not stopped yet.
//
// # Rates
//
// A key's Config.Rate is the generic cell rate algorithm (the token bucket stated as
// one theoretical arrival time, TAT) in one item: [Limiter.Reserve] grants a start at
// an instant and moves TAT by one emission interval, in one write whose condition is
// the case it computed (see Reserve). The grant is an instant Config.StartLead ahead,
// so that the permit's write and the worker's wake-up fit before it; a handler starts
// within 25 ms of its instant or gives it up and is deferred. Grants are 1/(0.95 ×
// Rate) apart, so Rate+1 of them span more than a second by 52 ms: no one-second window
// holds more than Rate starts on any clock that agrees with the workers' (they compare
// their own clocks with the items' times, so clock skew between workers shifts grants
// and lease ends by as much; AWS Time Sync keeps EC2 and Fargate within a millisecond).
//
// # Waiting and the redrive budget
//
// [Limiter.Middleware] takes the rate start first, holding nothing, and the permit
// after it, so no job holds a permit while it waits for a start. A job that finds no
// permit free, or no start within Config.MaxWait, is deferred (sqsworker.Defer, reason
// [ReasonBusy]; hosts count it as deferred, not failed). Every receive counts toward
// the redrive policy's maxReceiveCount, so with Config.Hopper a job at its last receive
// but one is re-sent with the delay (a new message, its receive count from zero, the
// spent receives in [AttributePriorReceives]) instead of being deferred into the
// dead-letter queue.
//
// # Cost and scale
//
// DynamoDB calls a job (TestDynamoDBCallsPerJob, moto, counted through a wrapped
// client): a concurrency limit 2 (take, release), a rate limit 1, both in one limiter
// 3, for a job whose permit is free and whose start is granted at the first write;
// renewals add one write per Lease/3 of a handler's run (none for jobs under 10 s with
// the default 30 s lease); a contended take adds up to 2 failed writes, which DynamoDB
// charges as writes. No call reads: the read limit of 3,000 units a second per
// partition never applies. A full permits item of 16 slots with the default holder
// names is 744 bytes (TestFullPermitsItemFitsOneWriteUnit), one write unit a write.
//
// The per-item arithmetic, against DynamoDB's 1,000 write units a second per partition
// (one item is always in one partition), for 100 workers running 10,000 jobs a second:
//
//   - Permits. A key with n permits and jobs of d seconds starts at most n/d jobs a
//     second, spread over ceil(n/16) items: at most 2 × 16/d = 32/d writes a second on
//     each full item, whatever n is (the shards grow with n). That is under 1,000 for
//     any job of 32 ms or more. Example: 10,000 jobs/s of 100 ms under one key need n =
//     1,000 permits (63 items, about 320 writes/s each); spread over 1,000 tenants with a
//     limit each, every tenant's item sees 10 jobs/s, 20 writes/s. What can overload an
//     item is a backlog of deferred jobs: each returns every 1.5 × RetryDelay on
//     average (3 s by default) and costs one failed write when the key is full, so a
//     key with more than about 3,000 jobs waiting at once passes 1,000 writes/s. Raise
//     RetryDelay for such keys (fair queues already keep one tenant's backlog from
//     delaying the others).
//   - Rates. Every start is one write to its rate item, two when the cached TAT was
//     wrong (a race, or the bucket went idle), so one item holds 500 to 1,000 starts a
//     second. Config.RateShards splits a key's rate over several items, each granting
//     its share: one shard per 400 starts a second keeps every item under 800 writes/s
//     at two writes a start. 10,000 calls a second to one API: RateShards 25.
//   - The whole table: 10,000 jobs/s with a concurrency limit are 20,000 write units a
//     second (30,000 with a rate as well), on demand or provisioned; the items' TTL
//     (an hour after the last lease or grant) deletes idle keys' items.
package fleetlimit
