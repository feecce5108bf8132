package producer

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS limits the producer applies (Amazon SQS Developer Guide, "Amazon SQS message
// quotas"). Local seam until internal/sqsx declares them once for the module.
const (
	// maxBatchEntries is the most entries one SendMessageBatch takes.
	maxBatchEntries = 10
	// maxBatchBytes is the most one SendMessageBatch may carry, all entries together.
	maxBatchBytes = 1 << 20
	// maxDelay is the longest DelaySeconds of one message.
	maxDelay = 15 * time.Minute
	// maxMessageAttributes is the most message attributes one message carries.
	maxMessageAttributes = 10
)

// messageSize counts a message as SQS counts it against MaximumMessageSize: the body's
// bytes plus, for each message attribute, the bytes of its name, its data type and its
// value.
func messageSize(body string, attributes map[string]types.MessageAttributeValue) int {
	size := len(body)
	for name, value := range attributes {
		size += len(name) + len(aws.ToString(value.DataType)) + len(aws.ToString(value.StringValue)) + len(value.BinaryValue)
	}
	return size
}
