// Package lambda runs a [sqsworker.Handler] behind the AWS Lambda SQS event source
// mapping, with partial batch responses.
//
// [NewBatchHandler] returns a function for aws-lambda-go's lambda.Start. It hands every
// record of the event to the handler as a [sqsworker.Message] and decides each record's
// fate with [sqsworker.Classify], as the long-poll worker does:
//
//   - nil: success; Lambda deletes the record.
//   - a permanent error: the function sends the record to the dead-letter queue of the
//     source queue's redrive policy itself, then reports success so Lambda deletes it.
//     If that send fails, the record is reported as failed instead.
//   - a retry-after or defer error, or any other error (a panic included): the function
//     sets the record's visibility timeout to the requested delay, or to the
//     [sqsworker.Backoff] delay, with ChangeMessageVisibilityBatch, then reports the
//     record in batchItemFailures. This is the retry backoff Lambda itself lacks.
//
// The event source mapping must have FunctionResponseTypes = ["ReportBatchItemFailures"];
// without it Lambda ignores the response and deletes the whole batch, failed records
// included. For such a mapping, use WithReportBatchItemFailures(false).
//
// The outcome rules are carried out by the same code as the poller's, with the same
// options: [WithErrorHandler], [WithDeadLetterSend], the backoff, the clamping to SQS's
// 12-hour limit. [New] returns the [BatchHandler] itself, whose Stats count every
// record's fate; [WithObserver] receives the same events the poller reports.
//
// Records of a standard queue run concurrently ([WithConcurrency]). Records of a FIFO
// queue run in order per message group; see [FIFOMode]. A record is not started when less
// than the deadline margin is left before the invocation's deadline ([WithDeadlineMargin]);
// it is reported as failed instead of being lost to a timeout. Handlers' contexts end at
// the deadline minus the margin; a handler that ignores its context is abandoned after
// at most 1 s more and its record reported as failed, so the response always goes out
// before Lambda's timeout (only a handler's return value is observed: work it detaches
// and returns nil from counts as a success).
//
// Usage, with awslambda as the import name of github.com/aws/aws-lambda-go/lambda:
//
//	func main() {
//		handler := sqsworker.HandlerFunc(sendWebhook)
//		awslambda.Start(lambda.NewBatchHandler(handler,
//			lambda.WithConcurrency(5),
//			lambda.WithLogger(slog.New(slog.NewJSONHandler(os.Stdout, nil)))))
//	}
//
// The function's execution role needs, beyond the event source mapping's own
// sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes:
// sqs:ChangeMessageVisibility on the source queue, sqs:GetQueueUrl, and sqs:SendMessage on
// the dead-letter queue.
package lambda
