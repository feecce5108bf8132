// Package settle carries out [sqsworker.Classify]'s decision for both hosts, the poller
// and the Lambda adapter, and is the one place that reports a message's life to the
// [sqsworker.Observer]. The hosts pass only what differs between them, as a [Finisher]:
// how a message that is done with is finished (the poller queues a batched delete; the
// Lambda host reports a success and the event source mapping deletes it) and how a
// message is made visible again later (the poller calls ChangeMessageVisibilityBatch at
// once; the Lambda host changes every failed record's visibility in one batch and lists
// it in batchItemFailures).
//
//	s := settle.New(settle.Config{Host: "poller", Backoff: b, Observer: o, DeadLetter: dlq})
//	d := settle.Delivery{Message: m, ReceivedAt: receivedAt}
//	s.Received(ctx, d)
//	d.StartedAt = s.Started(ctx, d)
//	err := settle.Call(ctx, handler, m)
//	done := s.Settle(ctx, d, err, finisher)
//
// The rules, the same on both hosts ([Plan]):
//   - delete: finished;
//   - dead-letter: sent to the dead-letter queue with the failure attributes, then
//     finished; when the send fails or is disabled, an ordinary retry, so the redrive
//     policy still moves the message;
//   - retry-after and defer: visible again after the requested delay;
//   - retry: visible again after the backoff policy's delay;
//   - any of these three at the receive count that reached the redrive policy's
//     maxReceiveCount ([Exhaust]): the last attempt, so dead-lettered with reason
//     sqsworker.ReasonRetriesExhausted and the attempt's error, then finished; when the
//     send fails or is disabled, rescheduled as planned, and the redrive policy moves it;
//
// every delay clamped to what is left of SQS's 12-hour visibility limit, counted from
// the larger of "since the first receive" and "since this receive", and rounded up to
// whole seconds.
package settle
