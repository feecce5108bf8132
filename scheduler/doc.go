// Package scheduler enqueues periodic jobs (schedules) on SQS queues so that every tick
// is enqueued exactly once, however many replicas run it.
//
// A [Schedule] names a cron expression (parsed by github.com/robfig/cron/v3: five fields,
// an optional leading seconds field, @every and the @daily-style descriptors), a time
// zone, a job type, a JSON payload and a queue. [ReadSchedules] reads the JSON
// definition format that the Terraform module infra/terraform/modules/eventbridge-schedules
// reads too, so a schedule moves between the container and EventBridge Scheduler by copy.
//
// Any number of replicas may run a [Scheduler] on one DynamoDB table. One holds a leader
// lease (an item written with a condition, carrying an expiry checked in the conditions,
// never by TTL, and a fencing token incremented at each takeover) and renews it while it
// runs; the others stand by and take the lease when it lapses. Each tick has a stable id
// ([TickID]: the schedule name and the scheduled time in UTC, RFC 3339). For each tick
// the leader
//
//  1. claims it: one TransactWriteItems checks that the lease item still carries its
//     owner, its token and an unexpired expiry, and records the tick in the schedule's
//     state item (only after the previous tick was recorded as enqueued, or re-claiming
//     the same tick from a lower token);
//  2. sends it through package producer with the tick id as the unique key (standard
//     queues; a DynamoDB conditional write in the same table) or deduplication id (FIFO
//     queues), and as the idempotency key attribute;
//  3. records it as enqueued, with its message id.
//
// So a leader that dies between 1 and 3 leaves a claimed tick that the next leader
// claims again and sends with the same unique key (sending nothing when the first send
// went out), two leaders for a moment cannot both pass step 1 with a valid lease, and a
// paused old leader that wakes up cannot claim anything: its token is stale. SQS takes no
// condition, so no write to DynamoDB can fence a send already past step 1 when its
// process paused; the unique key covers it: the woken send finds the key taken and sends
// nothing, or sends first and the new leader's send is deduplicated. Only a process
// paused inside its own SendMessage (after reserving the key) for longer than
// [Config.UniquePending] (1 minute by default) can duplicate a tick; that message
// carries the same idempotency key, so the idempotency middleware runs the job once.
//
// Ticks that fell due while no leader ran are handled by each schedule's missed-tick
// policy (skip, or catch up at most N); [Schedule.Jitter] spreads schedules that many
// services share. Lifecycle and events follow the poller: [New], [Scheduler.Run] (or
// Start and Shutdown), and an [Observer] told about leadership and ticks.
package scheduler
