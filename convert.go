package sqsworker

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MessageFromSQS translates a message returned by the SDK's ReceiveMessage into the
// neutral [Message] handlers see, received from the queue queueURL (with ARN queueARN,
// which may be empty). The system attributes map is shared with the SDK value, not
// copied. Receive count, timestamps and FIFO fields come from the system attributes
// (request MessageSystemAttributeNames "All" to have them).
func MessageFromSQS(in types.Message, queueURL, queueARN string) *Message {
	message := &Message{
		ID:            aws.ToString(in.MessageId),
		Body:          aws.ToString(in.Body),
		Attributes:    in.Attributes,
		QueueURL:      queueURL,
		QueueARN:      queueARN,
		ReceiptHandle: aws.ToString(in.ReceiptHandle),
	}
	if len(in.MessageAttributes) > 0 {
		message.MessageAttributes = make(map[string]MessageAttribute, len(in.MessageAttributes))
		for name, value := range in.MessageAttributes {
			message.MessageAttributes[name] = MessageAttribute{
				DataType:    aws.ToString(value.DataType),
				StringValue: aws.ToString(value.StringValue),
				BinaryValue: value.BinaryValue,
			}
		}
	}
	message.ApplySystemAttributes()
	return message
}
