package poller

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

var testQueue = &sqsinfo.Queue{URL: fakeQueueURL, ARN: fakeQueueARN}

func TestConvertMessage(t *testing.T) {
	t.Parallel()
	sent := time.UnixMilli(1_700_000_000_000)
	firstReceive := time.UnixMilli(1_700_000_005_000)
	tests := []struct {
		name string
		in   types.Message
		want *sqsworker.Message
	}{
		{
			name: "standard queue with attributes",
			in: types.Message{
				MessageId:     aws.String("m1"),
				ReceiptHandle: aws.String("rh1"),
				Body:          aws.String(`{"invoice":"I-5"}`),
				Attributes: map[string]string{
					"ApproximateReceiveCount":          "3",
					"SentTimestamp":                    "1700000000000",
					"ApproximateFirstReceiveTimestamp": "1700000005000",
				},
				MessageAttributes: map[string]types.MessageAttributeValue{
					"type":  {DataType: aws.String("String"), StringValue: aws.String("invoice")},
					"count": {DataType: aws.String("Number"), StringValue: aws.String("7")},
					"blob":  {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
				},
			},
			want: &sqsworker.Message{
				ID:   "m1",
				Body: `{"invoice":"I-5"}`,
				Attributes: map[string]string{
					"ApproximateReceiveCount":          "3",
					"SentTimestamp":                    "1700000000000",
					"ApproximateFirstReceiveTimestamp": "1700000005000",
				},
				MessageAttributes: map[string]sqsworker.MessageAttribute{
					"type":  {DataType: "String", StringValue: "invoice"},
					"count": {DataType: "Number", StringValue: "7"},
					"blob":  {DataType: "Binary", BinaryValue: []byte{1, 2}},
				},
				ReceiveCount:    3,
				SentAt:          sent,
				FirstReceivedAt: firstReceive,
				QueueURL:        fakeQueueURL,
				QueueARN:        fakeQueueARN,
				ReceiptHandle:   "rh1",
			},
		},
		{
			name: "FIFO message",
			in: types.Message{
				MessageId:     aws.String("m2"),
				ReceiptHandle: aws.String("rh2"),
				Body:          aws.String("b"),
				Attributes: map[string]string{
					"ApproximateReceiveCount": "1",
					"MessageGroupId":          "g1",
					"MessageDeduplicationId":  "d1",
				},
			},
			want: &sqsworker.Message{
				ID:   "m2",
				Body: "b",
				Attributes: map[string]string{
					"ApproximateReceiveCount": "1",
					"MessageGroupId":          "g1",
					"MessageDeduplicationId":  "d1",
				},
				ReceiveCount:    1,
				GroupID:         "g1",
				DeduplicationID: "d1",
				QueueURL:        fakeQueueURL,
				QueueARN:        fakeQueueARN,
				ReceiptHandle:   "rh2",
			},
		},
		{
			name: "no attributes: receive count 1",
			in:   types.Message{MessageId: aws.String("m3"), ReceiptHandle: aws.String("rh3"), Body: aws.String("")},
			want: &sqsworker.Message{ID: "m3", ReceiveCount: 1, QueueURL: fakeQueueURL, QueueARN: fakeQueueARN, ReceiptHandle: "rh3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := convertMessage(tc.in, testQueue)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("convertMessage:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func BenchmarkConvertMessage(b *testing.B) {
	benchmarks := []struct {
		name string
		in   types.Message
	}{
		{"plain", fakeMessage("m1", 1)},
		{"with 3 message attributes", func() types.Message {
			message := fakeMessage("m1", 2)
			message.MessageAttributes = map[string]types.MessageAttributeValue{
				"type":    {DataType: aws.String("String"), StringValue: aws.String("invoice")},
				"tenant":  {DataType: aws.String("String"), StringValue: aws.String("acme")},
				"version": {DataType: aws.String("Number"), StringValue: aws.String("2")},
			}
			return message
		}()},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				convertMessage(bm.in, testQueue)
			}
		})
	}
}
