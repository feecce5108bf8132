// Package sqsx is the SQS call layer of the hosts, the producer, the outbox, the
// scheduler and redrive: the conversion from the SDK's messages to [sqsworker.Message],
// message size counted as SQS counts it, the conversions of delays to the whole seconds
// SQS takes, and one batch helper (one entry-id scheme, one reading of per-entry results)
// behind every DeleteMessageBatch, ChangeMessageVisibilityBatch and SendMessageBatch call.
// SQS's limits, queue ARNs and URLs and the queue description are public, in package
// sqsinfo, which this package uses (one home per fact).
//
// It holds mechanics, not policy: what to do with a message is decided by
// sqsworker.Classify and carried out by internal/settle.
//
//	results := sqsx.DeleteMessages(ctx, client, queueURL, handles)
//	for i, result := range results {
//		if result.Err != nil && sqsx.Retryable(result.Err) {
//			retry = append(retry, handles[i])
//		}
//	}
//
// The root package must never import sqsx (sqsx imports the root for Message).
package sqsx
