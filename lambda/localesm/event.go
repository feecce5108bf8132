package localesm

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// event builds the SQS event Lambda sends for a batch, field for field as AWS does
// (system attributes as strings, message attributes with empty list values).
func (m *Mapping) event(messages []types.Message) events.SQSEvent {
	event := events.SQSEvent{Records: make([]events.SQSMessage, len(messages))}
	for i, message := range messages {
		record := events.SQSMessage{
			MessageId:              aws.ToString(message.MessageId),
			ReceiptHandle:          aws.ToString(message.ReceiptHandle),
			Body:                   aws.ToString(message.Body),
			Md5OfBody:              aws.ToString(message.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(message.MD5OfMessageAttributes),
			Attributes:             message.Attributes,
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSource:            "aws:sqs",
			EventSourceARN:         m.queueARN,
			AWSRegion:              m.region,
		}
		if record.Attributes == nil {
			record.Attributes = map[string]string{}
		}
		for name, value := range message.MessageAttributes {
			record.MessageAttributes[name] = events.SQSMessageAttribute{
				StringValue:      value.StringValue,
				BinaryValue:      value.BinaryValue,
				StringListValues: nonNil(value.StringListValues),
				BinaryListValues: nonNil(value.BinaryListValues),
				DataType:         aws.ToString(value.DataType),
			}
		}
		event.Records[i] = record
	}
	return event
}

func nonNil[T any](values []T) []T {
	if values == nil {
		return []T{}
	}
	return values
}

// messageIDs returns the batch's message ids in order.
func messageIDs(event events.SQSEvent) []string {
	ids := make([]string, len(event.Records))
	for i, record := range event.Records {
		ids[i] = record.MessageId
	}
	return ids
}
