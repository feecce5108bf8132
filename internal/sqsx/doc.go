// Package sqsx is the project's one SQS layer: SQS's limits declared once, queue ARN and
// URL parsing, the queue description the hosts read at start, message size counted as
// SQS counts it, the conversion from the SDK's messages to [sqsworker.Message], and one
// batch helper (one entry-id scheme, one reading of per-entry results) behind every
// DeleteMessageBatch, ChangeMessageVisibilityBatch and SendMessageBatch call.
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
