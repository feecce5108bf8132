// Package poller is the long-poll container worker of sqsworker: a process (an ECS
// task, a Kubernetes pod, any server) that receives messages from one SQS queue, or
// several (Config.Queues), and runs a [sqsworker.Handler] on each.
//
//	client := sqs.NewFromConfig(awsConfig)
//	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
//		return deliver(ctx, m.Body) // nil deletes; see sqsworker.Classify for errors
//	})
//	server, err := poller.New(client, poller.Config{
//		QueueURL:           queueURL,
//		HealthCheckAddress: "127.0.0.1:8080",
//	}, handler)
//	if err != nil {
//		log.Fatal(err) // every configuration problem, each naming its field
//	}
//	if err := server.Run(context.Background()); err != nil { // drains on SIGTERM/SIGINT
//		log.Fatal(err)
//	}
//
// What the server does:
//
//   - Receiving: long polls (WaitTimeSeconds 20, SQS's maximum), up to
//     Config.Receivers of them in flight at once (by default ⌈Concurrency /
//     MaxMessages⌉: one for the default Concurrency 10, two for 20), each asking for as
//     many messages as there are free Concurrency slots (at most 10), all together never
//     for more, so no message waits received but unstarted (unless Config.Prefetch
//     allows it; see Prefetch below). While one call is in flight, the others wait to
//     ask for a full batch. After a failed call every receiver pauses (one shared
//     back-off, 0.5 s doubling to 20 s, one probe call at a time). All system and
//     message attributes are requested. Each call asks for a visibility timeout of
//     Config.ReceiveVisibility (the queue's, at most 30 s), so a message whose
//     ReceiveMessage response is lost is hidden at most that long; once the shutdown
//     began, no failed receive is retried by the SDK.
//   - Handling: each message in its own goroutine (one per message group, in order, on
//     FIFO queues), through a recover wrapper (a panic fails the message, not the
//     process), with a context cancelled at Config.HandlerTimeout (cause
//     [ErrHandlerTimeout]).
//   - Heartbeat: while a message is held, its visibility is extended every
//     HeartbeatInterval (the first within half of ReceiveVisibility). The heartbeat
//     stops when the handler returns or reaches its timeout; a failed heartbeat is
//     logged once and ends that message's heartbeats. Heartbeats, deletes and
//     visibility changes run without the SDK's client-side retry quota (at most 3
//     attempts, 200 ms to 2 s apart, jittered), so a burst of errors elsewhere on the
//     client cannot make them fail fast with "retry quota exceeded".
//   - Settling, from [sqsworker.Classify]: success → batched DeleteMessageBatch (a full
//     batch of 10 goes out at once, a partial one Config.DeleteFlushInterval after its
//     oldest delete; up to max(4, Concurrency/10) calls in flight; every entry's result
//     is read; failed entries are retried while the receipt handle is valid);
//     permanent failure → sent to the dead-letter queue, then deleted; retry after /
//     defer → visibility set to the delay; other errors → visibility set to the
//     Config.Backoff delay. The failed attempt at the redrive policy's maxReceiveCount
//     is the last: the message is sent to the dead-letter queue with reason
//     [sqsworker.ReasonRetriesExhausted] and the last error, then deleted (with
//     Config.DisableDeadLetterSend, or when the send fails, the redrive policy moves
//     it at its next receive). The same code carries out outcomes for the Lambda adapter; on
//     a FIFO queue a failed message's new visibility goes out in the same
//     ChangeMessageVisibilityBatch that releases the rest of its group.
//   - Observing: every step of every message is reported to Config.Observer
//     ([sqsworker.Observer]); [Server.Stats] counts the same events.
//   - Shutdown: see [Server.Shutdown] for the order. On SIGTERM, Run stops receiving,
//     releases the messages not started, lets running handlers finish within
//     Config.DrainTimeout, then cancels the rest and releases their messages
//     (visibility 0) so another worker gets them within seconds, and returns nil (or
//     [ErrDeletesNotConfirmed] when a handled message's delete was never confirmed).
//     With Config.StopTimeout, the platform's kill time, the drain ends 5 s before it
//     and the process exits before it. One SIGTERM drains, however the caller's context
//     ends (signal.NotifyContext included); a second signal ends the drain at once.
//
// # Several queues
//
// Config.Queues lists queues consumed from one pool of Concurrency slots, each with its
// own handler (or the one given to New), visibility, backoff and redrive checks, and its
// own receivers, heartbeats and deletes ([QueueConfig]; see [ExampleQueueConfig]).
// Config.Priority shares the slots the way asynq and Shoryuken do:
//
//   - [Weighted] (default): while several queues have messages each gets
//     Weight/Σ weights of the messages received. It is stride scheduling over messages:
//     each receive advances its queue's pass by messages/weight, and freed slots go to
//     the waiting queue with the lowest pass, so no queue with messages is starved, and
//     a queue back from idle starts at the busy queues' lowest pass (idleness earns no
//     credit).
//   - [Strict]: a queue is polled only while every queue of higher Weight came back
//     empty from its last receive, or once it has waited its QueueConfig.MaxWait for
//     them (aging: it then takes the next freed slot first, and yields again).
//
// Weights and priority pick which queue a freed slot serves; they cannot free one. So
// QueueConfig.MinSlots reserves slots no other queue takes (whatever the weights and the
// priority), and QueueConfig.MaxSlots bounds the slots a queue holds: with long jobs on a
// low queue, either keeps slots for the high queue's messages, which then start within a
// receive's round trip instead of waiting for the long jobs to end. Stats.Slots shows
// each queue's share.
//
// A queue whose last receive came back empty is idle: it keeps one ReceiveMessage in
// flight (a long poll of WaitTime; SQS Developer Guide, "Amazon SQS short and long
// polling") asking for one message, so an idle queue costs one
// call per WaitTime and one slot, whatever Receivers says; the message that call brings
// makes it busy again. With one queue none of this applies.
//
// Limits ([Limit]: MaxConcurrency, and RatePerSecond with a token bucket of
// golang.org/x/time/rate): a queue's limits (QueueConfig.MaxSlots and Limit) act before
// the receive, so a queue at its MaxSlots or without a free token is not polled and
// no message waits received with its visibility timeout running. A job type's limit
// (Config.JobTypeLimits) can act only after the receive (the type is in the message):
// the message waits in the process, holding its slot, its heartbeat running, until its
// type has room. That loses nothing and keeps its receive count; releasing it with a
// short visibility change instead would add a receive toward maxReceiveCount each
// time (see the redrive policy's maxReceiveCount in the SQS Developer Guide, "Using
// dead-letter queues"), so a message over a busy type's limit could be dead-lettered
// without ever being handled. To keep a type's messages in SQS until they can run,
// give the type its own queue and a QueueConfig.Limit.
//
// Start refuses a queue without a redrive policy unless Config.AllowUnboundedRetries is
// set, and one whose maxReceiveCount is below 3 unless Config.AllowLowMaxReceiveCount is
// (it warns below 5). Handlers must honour their context: a handler still running a
// second after its context was cancelled is abandoned (its message has been settled); up
// to Config.MaxAbandonedHandlers such handlers give their concurrency slot back, later
// ones keep it until they return, and the health endpoint answers 503 when they hold
// every slot.
//
// # Prefetch
//
// By default no message waits received but unstarted, so with slow handlers, which
// free their slots one at a time, each receive brings one or two messages. With
// Config.Prefetch (at most 10, one batch) the server holds up to that many messages
// beyond Concurrency, the way Celery's prefetch multiplier and Spring Cloud AWS's batch
// polling do: a receive waits for Prefetch free slots while the held messages keep the
// handlers busy, then asks for a full batch; a handler that returns starts the longest
// held message at once, in receive order. Held messages have heartbeats from their
// receive on and count against their queue's share and MaxSlots; a shutdown
// releases them at once (visibility 0) and starts none; a crash leaves them invisible
// until their visibility runs out. It is refused with rate limits and JobTypeLimits.
//
// # Environment
//
// [ConfigFromEnvironment] fills a Config's zero fields from the poller's SQSWORKER_*
// variables (the Env constants: the queue or queues, the priority, the handler, drain and
// stop timeouts, the health address, unbounded retries), as worker.Run does for the
// long-poll worker; it reads no Lambda variable.
package poller
