package lambda

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsworker/sqsworker"
	"github.com/stretchr/testify/assert"
)

func TestQueueURLFromARN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, arn, want string
	}{
		{name: "standard", arn: "arn:aws:sqs:us-east-2:123456789012:orders", want: "https://sqs.us-east-2.amazonaws.com/123456789012/orders"},
		{name: "fifo", arn: "arn:aws:sqs:eu-west-1:123456789012:orders.fifo", want: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo"},
		{name: "china", arn: "arn:aws-cn:sqs:cn-north-1:123456789012:orders", want: "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders"},
		{name: "not sqs", arn: "arn:aws:sns:us-east-2:123456789012:orders", want: ""},
		{name: "empty", arn: "", want: ""},
		{name: "no name", arn: "arn:aws:sqs:us-east-2:123456789012:", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queueURLFromARN(tc.arn); got != tc.want {
				t.Errorf("queueURLFromARN(%q) = %q, want %q", tc.arn, got, tc.want)
			}
		})
	}
}

func TestToMessage(t *testing.T) {
	t.Parallel()
	text := "order.created"
	record := &events.SQSMessage{
		MessageId:     "m1",
		ReceiptHandle: "r1",
		Body:          `{"order":"A-1"}`,
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "3",
			"SentTimestamp":                    "1545082649183",
			"ApproximateFirstReceiveTimestamp": "1545082649185",
			"MessageGroupId":                   "g1",
			"MessageDeduplicationId":           "d1",
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"type":    {StringValue: &text, DataType: "String"},
			"payload": {BinaryValue: []byte{1, 2}, DataType: "Binary"},
		},
		EventSourceARN: "arn:aws:sqs:us-east-2:123456789012:orders.fifo",
	}
	got := toMessage(record, "https://sqs.us-east-2.amazonaws.com/123456789012/orders.fifo")
	want := &sqsworker.Message{
		ID:         "m1",
		Body:       `{"order":"A-1"}`,
		Attributes: record.Attributes,
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			"type":    {DataType: "String", StringValue: "order.created"},
			"payload": {DataType: "Binary", BinaryValue: []byte{1, 2}},
		},
		ReceiveCount:    3,
		SentAt:          got.SentAt,
		FirstReceivedAt: got.FirstReceivedAt,
		GroupID:         "g1",
		DeduplicationID: "d1",
		QueueURL:        "https://sqs.us-east-2.amazonaws.com/123456789012/orders.fifo",
		QueueARN:        "arn:aws:sqs:us-east-2:123456789012:orders.fifo",
		ReceiptHandle:   "r1",
	}
	assert.Equal(t, want, got, "toMessage")
	if got.SentAt.UnixMilli() != 1545082649183 || got.FirstReceivedAt.UnixMilli() != 1545082649185 {
		t.Errorf("timestamps %v, %v", got.SentAt, got.FirstReceivedAt)
	}
}
