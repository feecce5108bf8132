// Package scheduler enqueues periodic jobs (schedules) on SQS queues from any number of
// replicas: one leader enqueues each tick at least once, and every copy of a tick
// carries the tick's id as its idempotency key, so a consumer that keeps an idempotency
// record per key runs each tick's handler exactly once.
//
// A [Schedule] names a cron expression (parsed by github.com/robfig/cron/v3: five fields,
// an optional leading seconds field, @every and the @daily-style descriptors), a time
// zone, a job type, a JSON payload and a queue. [ReadSchedules] reads the JSON
// definition format that the Terraform module infra/terraform/modules/eventbridge-schedules
// reads too, so a schedule moves between the container and EventBridge Scheduler by copy.
//
// # Leader
//
// Any number of replicas may run a [Scheduler] on one DynamoDB table. One holds a leader
// lease (an item written with a condition, carrying an expiry checked in the conditions,
// never by TTL, and a fencing token incremented at each takeover) and renews it while it
// runs; the others stand by and take the lease when it lapses, at most
// Config.LeaseDuration after the leader died (plus RenewInterval, how often they look).
//
// # Ticks: enqueued at least once
//
// Each tick has a stable id ([TickID]: the schedule's name and the scheduled time in
// UTC). Each schedule's state item in the table records its last tick. For each tick
// the leader
//
//  1. claims it: one TransactWriteItems checks that the lease item still carries its
//     owner, its token and an unexpired expiry, and records the tick in the state item
//     as claimed and not sent (only after the previous tick was recorded as sent);
//  2. sends its message with the tick id as the idempotency key attribute, and on FIFO
//     queues as the deduplication id;
//  3. records it as sent, with its message id. Then the next tick may be claimed.
//
// A tick claimed and not recorded as sent is sent again, claimed again under the lease
// each time: by the same leader after a failed send (also when SQS took the message and
// only its response was lost), and by the next leader after the leader died between 1
// and 3 (at once after the takeover, so the ticks behind it wait no longer than the
// takeover). Two leaders for a moment cannot both pass step 1 with a valid lease, and a
// paused old leader that wakes up cannot claim anything: its token is stale. So every
// tick is enqueued at least once, and more than once only when a send was not recorded
// (a lost response, a crash between 2 and 3, a paused leader whose SendMessage went out
// after the takeover): on a FIFO queue SQS drops a copy sent within its 5-minute
// deduplication interval; on a standard queue the copy is delivered (as a standard
// queue may deliver any message twice). [EventTickEnqueued]'s Attempt counts the sends.
//
// # Handlers: exactly once with the idempotency middleware
//
// The exactly-once step is the consumer's: register each scheduled job type behind
// package idempotency's middleware, whose default key is the idempotency key attribute,
// here the tick id (see the package example). Its record of the tick (IN_PROGRESS while
// the handler runs, COMPLETED for its Config.TTL, 1 h by default) makes every copy and
// every redelivery after the first successful run a completed duplicate, so the
// handler completes exactly once per tick, as far as that record goes (package
// idempotency says what it covers); a failed run releases the record and the message
// is retried as any job is. Keep that TTL longer than the time between a
// tick's copies (the takeover time, or an SQS outage) and the queue's visibility
// timeout. Without the middleware a handler may run twice for one tick.
//
// # Missed ticks, run on start
//
// A tick is on time when it is enqueued within Config.MissedAfter (the grace period,
// at least LeaseDuration + RenewInterval) of its time; of the ticks that fell due while
// no replica led, the last one before the takeover is on time too when within the grace
// period, so a handoff loses no tick. The other due ticks are missed: each schedule's
// policy ([Schedule.CatchUp]) enqueues the most recent ones and skips the rest, and the
// leader logs one line per schedule with the counts (the count costs one step per day,
// however many ticks were missed). A schedule with [Schedule.RunOnStart] gets one tick
// ([StartTickID]) when a leader starts and its last tick is older than one interval.
// [Schedule.Jitter] spreads schedules that many services share.
//
// # Items
//
// The lease and the state items have ids "scheduler#lease#<name>" and
// "scheduler#schedule#<schedule>". An item under those ids that the scheduler did not
// write is an error matching [ErrMalformedItem]: logged, never taken for a lease or a
// tick, left alone, and read again after a backoff (1 s, doubling up to 1 min). Other
// failures back off from 1 s up to Config.RenewInterval, and are logged too.
//
// Lifecycle and events follow the poller: [New], [Scheduler.Run] (or Start and
// Shutdown), and an [Observer] told about leadership and ticks.
package scheduler
