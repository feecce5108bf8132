package sqsinfo

import "time"

// SQS's limits, from the Amazon SQS Developer Guide ("Amazon SQS message quotas",
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html)
// and the API Reference (SendMessageBatch, ReceiveMessage, ChangeMessageVisibility). Every
// package of every sqsworker module takes them from here.
const (
	// MaxBatchEntries is the most entries one SendMessageBatch, DeleteMessageBatch or
	// ChangeMessageVisibilityBatch request may carry, and the most messages one
	// ReceiveMessage returns (MaxNumberOfMessages 1 to 10).
	MaxBatchEntries = 10
	// MaxMessageBytes is the largest message SQS accepts, and the largest value of a
	// queue's MaximumMessageSize attribute: 1 MiB (1,048,576 bytes) since August 2025,
	// 256 KiB before. A message's size is its body's bytes plus, for each message
	// attribute, the bytes of its name, data type and value ("Amazon SQS message
	// attributes" in the Developer Guide).
	MaxMessageBytes = 1 << 20
	// MaxBatchBytes is the most one SendMessageBatch request may carry in total, the sum
	// of its entries' sizes: 1 MiB (API Reference, SendMessageBatch: "The maximum allowed
	// individual message size and the maximum total payload size (the sum of the
	// individual lengths of all of the batched messages) are both 1 MiB").
	MaxBatchBytes = 1 << 20
	// DefaultMaximumMessageSize is the MaximumMessageSize of a queue created without the
	// attribute (256 KiB), used when a queue does not report one.
	DefaultMaximumMessageSize = 256 * 1024
	// MinMaximumMessageSize is the smallest MaximumMessageSize a queue may have (1 KiB).
	MinMaximumMessageSize = 1024
	// MaxMessageAttributes is the most message attributes one message may carry.
	MaxMessageAttributes = 10
	// MaxBatchEntryIDLength is the longest batch entry id (alphanumerics, '-' and '_').
	MaxBatchEntryIDLength = 80
	// MaxDeduplicationIDLength is the longest MessageDeduplicationId and MessageGroupId.
	MaxDeduplicationIDLength = 128
	// MaxListedMoveTasks is the most tasks one ListMessageMoveTasks returns (MaxResults
	// 1 to 10).
	MaxListedMoveTasks = 10

	// MaxVisibilityTimeout is the limit on a message's visibility timeout: 12 hours from
	// the receive; ChangeMessageVisibility rejects more ("Visibility timeout" in the
	// Developer Guide).
	MaxVisibilityTimeout = 12 * time.Hour
	// MaxWaitTime is the longest long poll (ReceiveMessage WaitTimeSeconds 0 to 20).
	MaxWaitTime = 20 * time.Second
	// MaxDelay is the longest delivery delay (DelaySeconds 0 to 900, 15 minutes).
	MaxDelay = 15 * time.Minute
	// MaxRetention is the longest message retention period (14 days), MinRetention the
	// shortest (60 s).
	MaxRetention = 14 * 24 * time.Hour
	MinRetention = time.Minute
)
