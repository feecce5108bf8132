// Package sqsworker is a runtime for background jobs on Amazon SQS.
//
// One [Handler] runs in two hosts: the long-poll container worker in package
// poller (ECS, or any process) and the AWS Lambda adapter in package lambda
// (behind the SQS event source mapping). Both hand the handler the same neutral
// [Message] and both decide a message's fate from the handler's error with the
// same rules, written once in [Classify]:
//
//   - nil: the message is deleted.
//   - an error wrapped by [Permanent] (or matching [ErrPermanent]): no retries; the
//     message is sent to the dead-letter queue now, with attributes naming the
//     failure, and deleted from the source queue only after that send succeeded.
//   - a [*RetryAfterError] (from [RetryAfter]): the message becomes visible again
//     after the given delay.
//   - a [*DeferError] (from [Defer]): like RetryAfter, but counted as deferred, not
//     failed (for example a duplicate whose original is still running).
//   - any other error, or a panic in the handler: retried with [Backoff] through the
//     message's visibility timeout, until the queue's redrive policy moves it to the
//     dead-letter queue after maxReceiveCount receives.
//
// Both hosts report every step of a message's life to an [Observer] (events as values:
// received, started, finished, heartbeats, deleted, dead-lettered, rescheduled,
// released, abandoned): metrics, traces and operations pages plug in there, and
// [Counter] counts the events into the [Stats] both hosts report. Package sqsworkertest
// runs a handler in-process and returns what the hosts would do with the message.
//
// A minimal container worker:
//
//	h := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
//		var job Job
//		if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
//			return sqsworker.Permanent("MalformedBody", err)
//		}
//		return job.Run(ctx)
//	})
//	srv, err := poller.New(sqsClient, poller.Config{QueueURL: url}, h)
//	if err != nil {
//		log.Fatal(err)
//	}
//	if err := srv.Run(context.Background()); err != nil { // nil after a graceful drain
//		log.Fatal(err)
//	}
package sqsworker
