package sqsx

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// MessageSize returns the size SQS counts against a queue's MaximumMessageSize and the
// batch payload limit: the body's bytes plus, for each message attribute, the bytes of
// its name, its data type and its value (string or binary). See "Amazon SQS message
// attributes" in the Developer Guide: each attribute's name, type and value count
// toward the message size.
func MessageSize(message *sqsworker.Message) int {
	size := len(message.Body)
	for name, attribute := range message.MessageAttributes {
		size += AttributeSize(name, attribute.DataType, attribute.StringValue, attribute.BinaryValue)
	}
	return size
}

// AttributeSize is what one message attribute adds to a message's size.
func AttributeSize(name, dataType, stringValue string, binaryValue []byte) int {
	return len(name) + len(dataType) + len(stringValue) + len(binaryValue)
}

// SDKAttributesSize is what the SDK-form attributes add to a message's size.
func SDKAttributesSize(attributes map[string]types.MessageAttributeValue) int {
	size := 0
	for name, value := range attributes {
		size += AttributeSize(name, aws.ToString(value.DataType), aws.ToString(value.StringValue), value.BinaryValue)
	}
	return size
}

// SendEntrySize is the size of one SendMessageBatch entry as SQS counts it against
// [sqsinfo.MaxBatchBytes] and the queue's MaximumMessageSize: body plus attributes.
func SendEntrySize(entry types.SendMessageBatchRequestEntry) int {
	return len(aws.ToString(entry.MessageBody)) + SDKAttributesSize(entry.MessageAttributes)
}
