// Package tasktoken runs the jobs of AWS Step Functions' callback pattern on either host
// (the poller and the Lambda adapter): a Task state whose resource is
// arn:aws:states:::sqs:sendMessage.waitForTaskToken sends a message carrying its task
// token ($$.Task.Token) and waits until a worker answers it (AWS Step Functions Developer
// Guide, "Wait for a Callback with Task Token"; API reference: SendTaskSuccess,
// SendTaskFailure, SendTaskHeartbeat).
//
// [New] returns a [sqsworker.Middleware] that reads the token from the body field or
// message attribute the state machine puts it in ([BodyField], [Attribute]) and answers it
// from the handler's outcome:
//
//   - success: SendTaskSuccess with the output the handler set with [SetOutput] ("{}"
//     when it set none); output above [MaxOutputBytes] (Step Functions' 256 KiB limit) is
//     refused with SendTaskFailure error [ErrorOutputTooLarge];
//   - a permanent failure ([sqsworker.Permanent]): SendTaskFailure with the failure's
//     reason as the error name, which the state's Catch or Retry matches (ErrorEquals),
//     and the error text as the cause;
//   - any other failure stays the queue's to retry until the message's last attempt (its
//     receive count has reached the redrive policy's maxReceiveCount), which reports
//     SendTaskFailure error [ErrorRetriesExhausted].
//
// Give every task state HeartbeatSeconds: without it a worker that dies leaves the task
// waiting until TimeoutSeconds (a year by default, the execution's limit), and LocalStack
// refuses heartbeats for it (localstack/README.md).
//
// Once the task is answered the message is finished (deleted): the outcome is Step
// Functions' from then on, recorded in the execution's history, and a failure reported
// there does not also go to the dead-letter queue.
//
// While the handler runs, SendTaskHeartbeat is sent every Config.HeartbeatInterval, so a
// state with HeartbeatSeconds does not time out a long job. When Step Functions answers a
// heartbeat with TaskTimedOut, TaskDoesNotExist or InvalidToken, the task is closed: the
// handler's context is cancelled (its cause is [ErrTaskClosed]) and the message finished
// without retry. Before running the handler again for a redelivered message (receive count
// above 1), the middleware sends one heartbeat to learn whether the task is still open: a
// job whose task was already answered (its delete lost, say) or timed out is finished
// without running again. This makes a job run at most once per open task, not exactly
// once: a delivery that crashes after its effect but before the
// answer runs again, so effects need idempotency keys of their own (package idempotency).
package tasktoken
