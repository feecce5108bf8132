package sqsx

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// FromSDK translates a message returned by the SDK's ReceiveMessage into the neutral
// [sqsworker.Message] handlers see, received from the queue queueURL (with ARN queueARN,
// which may be empty). The system attributes map is shared with the SDK value, not
// copied. Receive count, timestamps and FIFO fields come from the system attributes
// (request MessageSystemAttributeNames "All" to have them), see [ApplySystemAttributes].
func FromSDK(in types.Message, queueURL, queueARN string) *sqsworker.Message {
	message := &sqsworker.Message{
		ID:            aws.ToString(in.MessageId),
		Body:          aws.ToString(in.Body),
		Attributes:    in.Attributes,
		QueueURL:      queueURL,
		QueueARN:      queueARN,
		ReceiptHandle: aws.ToString(in.ReceiptHandle),
	}
	if len(in.MessageAttributes) > 0 {
		message.MessageAttributes = make(map[string]sqsworker.MessageAttribute, len(in.MessageAttributes))
		for name, value := range in.MessageAttributes {
			message.MessageAttributes[name] = sqsworker.MessageAttribute{
				DataType:    aws.ToString(value.DataType),
				StringValue: aws.ToString(value.StringValue),
				BinaryValue: value.BinaryValue,
			}
		}
	}
	ApplySystemAttributes(message)
	return message
}

// ToSDKAttributes converts message attributes back to the SDK's form, for a send. A
// Binary attribute carries BinaryValue only, every other type StringValue only.
func ToSDKAttributes(attributes map[string]sqsworker.MessageAttribute) map[string]types.MessageAttributeValue {
	if len(attributes) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attributes))
	for name, value := range attributes {
		out[name] = ToSDKAttribute(value)
	}
	return out
}

// ToSDKAttribute converts one message attribute to the SDK's form.
func ToSDKAttribute(value sqsworker.MessageAttribute) types.MessageAttributeValue {
	attribute := types.MessageAttributeValue{DataType: aws.String(value.DataType), BinaryValue: value.BinaryValue}
	if value.BinaryValue == nil {
		attribute.StringValue = aws.String(value.StringValue)
	}
	return attribute
}

// SQS system attribute names that [ApplySystemAttributes] reads.
const (
	AttributeReceiveCount     = "ApproximateReceiveCount"
	AttributeSentTimestamp    = "SentTimestamp"
	AttributeFirstReceiveTime = "ApproximateFirstReceiveTimestamp"
	AttributeMessageGroupID   = "MessageGroupId"
	AttributeDeduplicationID  = "MessageDeduplicationId"
)

// ApplySystemAttributes fills m's ReceiveCount, SentAt, FirstReceivedAt, GroupID and
// DeduplicationID from m.Attributes (timestamps are epoch milliseconds, as SQS sends
// them). Missing or malformed values leave the field as it was; a missing receive count
// becomes 1, since the message has been received at least once. Both hosts' converters
// call it.
func ApplySystemAttributes(m *sqsworker.Message) {
	if count, err := strconv.Atoi(m.Attributes[AttributeReceiveCount]); err == nil {
		m.ReceiveCount = count
	}
	if m.ReceiveCount < 1 {
		m.ReceiveCount = 1
	}
	if at, ok := epochMilliseconds(m.Attributes[AttributeSentTimestamp]); ok {
		m.SentAt = at
	}
	if at, ok := epochMilliseconds(m.Attributes[AttributeFirstReceiveTime]); ok {
		m.FirstReceivedAt = at
	}
	if group := m.Attributes[AttributeMessageGroupID]; group != "" {
		m.GroupID = group
	}
	if id := m.Attributes[AttributeDeduplicationID]; id != "" {
		m.DeduplicationID = id
	}
}

func epochMilliseconds(text string) (time.Time, bool) {
	milliseconds, err := strconv.ParseInt(text, 10, 64)
	if err != nil || milliseconds <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(milliseconds), true
}
