// Package poller is the long-poll container worker of sqsworker: a process (an ECS
// task, a Kubernetes pod, any server) that receives messages from one SQS queue and
// runs a [sqsworker.Handler] on each.
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
//     for more, so no message waits received but unstarted. While one call is in
//     flight, the others wait to ask for a full batch. After a failed call every
//     receiver pauses (one shared back-off, 0.5 s doubling to 20 s, one probe call at a
//     time). All system and message attributes are requested. Each call asks for a
//     visibility timeout of Config.ReceiveVisibility (the queue's, at most 30 s), so a
//     message whose ReceiveMessage response is lost is hidden at most that long; once
//     the shutdown began, no failed receive is retried by the SDK.
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
//     is read; failed entries are retried while the receipt handle is valid); permanent failure → sent to the dead-letter queue, then deleted; retry
//     after / defer → visibility set to the delay; other errors → visibility set to
//     the Config.Backoff delay, until the redrive policy moves the message to the
//     dead-letter queue. The same code carries out outcomes for the Lambda adapter; on
//     a FIFO queue a failed message's new visibility goes out in the same
//     ChangeMessageVisibilityBatch that releases the rest of its group.
//   - Observing: every step of every message is reported to Config.Observer
//     ([sqsworker.Observer]); [Server.Stats] counts the same events.
//   - Shutdown: see [Server.Shutdown] for the order. On SIGTERM, Run stops receiving,
//     lets running handlers finish within Config.DrainTimeout, then cancels the rest and
//     releases their messages (visibility 0) so another worker gets them within
//     seconds, and returns nil (or [ErrDeletesNotConfirmed] when a handled message's
//     delete was never confirmed).
//
// Start refuses a queue without a redrive policy unless Config.AllowUnboundedRetries is
// set, and one whose maxReceiveCount is below 3 unless Config.AllowLowMaxReceiveCount is
// (it warns below 5). Handlers must honour their context: a handler still running a
// second after its context was cancelled is abandoned (its message has been settled); up
// to Config.MaxAbandonedHandlers such handlers give their concurrency slot back, later
// ones keep it until they return, and the health endpoint answers 503 when they hold
// every slot.
package poller
