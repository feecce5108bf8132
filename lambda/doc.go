// Package lambda runs a [sqsworker.Handler] behind the AWS Lambda SQS event source
// mapping, with partial batch responses.
//
// [NewBatchHandler] returns a [BatchHandler], whose Handle method is the function for
// aws-lambda-go's lambda.Start, or an error naming every bad option. It hands every
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
//   - such an error at the record's last attempt (its receive count has reached the
//     redrive policy's maxReceiveCount): the function sends the record to the
//     dead-letter queue itself with reason [sqsworker.ReasonRetriesExhausted] and the
//     error, then reports success. With WithDisableDeadLetterSend(true), or when that send
//     fails, it is reported as failed and the redrive policy moves it at its next
//     receive, without a reason.
//
// A problem of one record (a malformed body, an unknown job type, a missing claim-check
// payload, its handler's error) is always that record's outcome. An infrastructure fault
// that hits every record is not: after [DefaultInfrastructureFaultThreshold] records in
// a row fail with the same one (an AWS SDK call denied, throttled, failing with a 5xx, or
// not sent), no more records start and the invocation fails as a whole; see
// [WithInfrastructureFaultThreshold].
//
// Every copy the function sends to the dead-letter queue carries the failure attributes
// (reason, the original message id, error, receive count, source queue; see
// [sqsworker.AttributeFailureReason]).
//
// The event source mapping must have FunctionResponseTypes = ["ReportBatchItemFailures"];
// without it Lambda ignores the response and deletes the whole batch, failed records
// included. For such a mapping, use WithReportBatchItemFailures(false).
//
// The outcome rules are carried out by the same code as the poller's, with the same
// options: [WithErrorHandler], [WithDisableDeadLetterSend], the backoff, the clamping to SQS's
// 12-hour limit. The [BatchHandler]'s Stats count every record's fate; [WithObserver]
// receives the same events the poller reports.
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
// # Concurrent invocations (Lambda Managed Instances)
//
// Lambda Managed Instances send several invocations at once to one execution environment
// (the function's PerExecutionEnvironmentMaxConcurrency;
// https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html).
// aws-lambda-go reads AWS_LAMBDA_MAX_CONCURRENCY, which Lambda sets there, and runs that
// many invoke loops in one process, each calling the same handler function. A
// [BatchHandler] is safe for that: everything about one invocation (its records, their
// outcomes, its deadline budget and watchdog, its response) lives in that call of
// [BatchHandler.Handle]. Invocations share only the SQS client (made once, under a
// lock), the cache of queue descriptions (one GetQueueAttributes load per queue, shared
// by the invocations that need it; none holds a lock across the call, and each waits
// for it only until its own deadline), the counters behind [BatchHandler.Stats]
// (atomic), and the backoff's Random (calls serialised). What you pass in is shared by
// every invocation and called from several goroutines at once, as it already is for the
// records of one invocation: the handler, the observer, the error handler, the logger
// and the SQS client must be safe for concurrent use (*sqs.Client, slog's handlers,
// [sqsworker.ServeMux], the idempotency middleware and the emf Recorder are).
//
// [WithConcurrency] bounds the records of one invocation: the process runs up to
// AWS_LAMBDA_MAX_CONCURRENCY times that many handlers at once. Every log line carries
// its own invocation's aws_request_id; with more than one invoke loop aws-lambda-go does
// not set the _X_AMZN_TRACE_ID variable and puts the trace id only in the invocation's
// context. A handler that ignores its context and is abandoned keeps running in the
// process while later invocations run (on default Lambda the environment is frozen
// between invocations).
//
// Usage, with awslambda as the import name of github.com/aws/aws-lambda-go/lambda:
//
//	func main() {
//		handler := sqsworker.HandlerFunc(sendWebhook)
//		batch, err := lambda.NewBatchHandler(handler,
//			lambda.WithConcurrency(5),
//			lambda.WithLogger(slog.New(slog.NewJSONHandler(os.Stdout, nil))))
//		if err != nil {
//			log.Fatal(err) // the function's init fails, with every problem in its log
//		}
//		awslambda.Start(batch.Handle)
//	}
//
// [OptionsFromEnvironment] reads the adapter's SQSWORKER_* variables (the Env constants:
// deadline margin, FIFO mode, the batch failure switches, the fault threshold) into
// options, as worker.Run does for a Lambda function; it reads no poller variable. Without
// [WithLogger] the adapter logs as the function's logging configuration says
// ([LoggerFromEnvironment]).
//
// The function's execution role needs, beyond the event source mapping's own
// sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes:
// sqs:ChangeMessageVisibility on the source queue, sqs:GetQueueUrl, and sqs:SendMessage on
// the dead-letter queue.
package lambda
