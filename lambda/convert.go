package lambda

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
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
	sqsx.ApplySystemAttributes(message)
	return message
}

// queueURLFromARN derives a queue's URL from its ARN ([sqsinfo.QueueARN.URL]). It returns
// "" for anything else; SQS calls for such a record then fail and are logged, and the
// record is still reported failed.
func queueURLFromARN(arn string) string {
	parsed, err := sqsinfo.ParseQueueARN(arn)
	if err != nil {
		return ""
	}
	return parsed.URL()
}

// isFIFO reports whether the batch comes from a FIFO queue.
func isFIFO(records []events.SQSMessage) bool {
	for i := range records {
		if sqsinfo.IsFIFOName(records[i].EventSourceARN) || records[i].Attributes["MessageGroupId"] != "" {
			return true
		}
	}
	return false
}
