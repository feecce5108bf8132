package lambda

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsworker/sqsworker"
)

// toMessage translates one record of the event into the neutral message handlers see.
// queueURL is the record's queue URL, derived from its eventSourceARN.
func toMessage(record *events.SQSMessage, queueURL string) *sqsworker.Message {
	message := &sqsworker.Message{
		ID:            record.MessageId,
		Body:          record.Body,
		Attributes:    record.Attributes,
		QueueURL:      queueURL,
		QueueARN:      record.EventSourceARN,
		ReceiptHandle: record.ReceiptHandle,
	}
	if len(record.MessageAttributes) > 0 {
		message.MessageAttributes = make(map[string]sqsworker.MessageAttribute, len(record.MessageAttributes))
		for name, attribute := range record.MessageAttributes {
			value := sqsworker.MessageAttribute{DataType: attribute.DataType, BinaryValue: attribute.BinaryValue}
			if attribute.StringValue != nil {
				value.StringValue = *attribute.StringValue
			}
			message.MessageAttributes[name] = value
		}
	}
	message.ApplySystemAttributes()
	return message
}

// queueURLFromARN derives a queue's URL from its ARN
// ("arn:PARTITION:sqs:REGION:ACCOUNT:NAME" → "https://sqs.REGION.DOMAIN/ACCOUNT/NAME"),
// the form SQS documents for queue URLs. It returns "" for anything else; SQS calls for
// such a record then fail and are logged, and the record is still reported failed.
func queueURLFromARN(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return ""
	}
	domain := "amazonaws.com"
	if parts[1] == "aws-cn" {
		domain = "amazonaws.com.cn"
	}
	return "https://sqs." + parts[3] + "." + domain + "/" + parts[4] + "/" + parts[5]
}

// isFIFO reports whether the batch comes from a FIFO queue.
func isFIFO(records []events.SQSMessage) bool {
	for i := range records {
		if strings.HasSuffix(records[i].EventSourceARN, ".fifo") || records[i].Attributes["MessageGroupId"] != "" {
			return true
		}
	}
	return false
}
