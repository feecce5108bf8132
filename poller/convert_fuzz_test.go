package poller

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// FuzzConvertMessage checks that converting an SDK message never panics and carries id,
// body, receipt handle, receive count, timestamps, group id and one message attribute
// through unchanged (the receive count becomes 1 when missing, malformed or below 1).
func FuzzConvertMessage(f *testing.F) {
	f.Add("m-1", `{"id":"k-1"}`, "rh-1", "3", "1700000000000", "", "type", "String", "invoice", []byte{}, false)
	f.Add("", "", "", "", "", "", "", "", "", []byte{}, true)
	f.Add("m-2", "\xff\xfe", "rh", "-4", "-1", "group-A", "blob", "Binary", "", []byte{0, 1, 2}, false)
	f.Add("m-3", "body", "rh", "99999999999999999999", "abc", "g", "n", "Number.int", "12", []byte{}, false)
	f.Fuzz(func(t *testing.T, id, body, receipt, receiveCount, sent, group, attrName, attrType, attrValue string, binary []byte, nilPointers bool) {
		in := types.Message{
			MessageId:     aws.String(id),
			Body:          aws.String(body),
			ReceiptHandle: aws.String(receipt),
			Attributes:    map[string]string{},
		}
		if nilPointers {
			in.MessageId, in.Body, in.ReceiptHandle = nil, nil, nil
			id, body, receipt = "", "", ""
		}
		if receiveCount != "" {
			in.Attributes["ApproximateReceiveCount"] = receiveCount
		}
		if sent != "" {
			in.Attributes["SentTimestamp"] = sent
		}
		if group != "" {
			in.Attributes["MessageGroupId"] = group
		}
		if attrName != "" {
			value := types.MessageAttributeValue{DataType: aws.String(attrType)}
			if len(binary) > 0 {
				value.BinaryValue = binary
			} else {
				value.StringValue = aws.String(attrValue)
			}
			in.MessageAttributes = map[string]types.MessageAttributeValue{attrName: value}
		}

		got := convertMessage(in, testQueue)

		if got.ID != id || got.Body != body || got.ReceiptHandle != receipt {
			t.Fatalf("id/body/receipt = %q/%q/%q, want %q/%q/%q", got.ID, got.Body, got.ReceiptHandle, id, body, receipt)
		}
		if got.QueueURL != testQueue.URL || got.QueueARN != testQueue.ARN {
			t.Fatalf("queue = %q/%q", got.QueueURL, got.QueueARN)
		}
		wantCount := 1
		if n, err := strconv.Atoi(receiveCount); err == nil && n >= 1 {
			wantCount = n
		}
		if got.ReceiveCount != wantCount {
			t.Fatalf("ReceiveCount = %d for %q, want %d", got.ReceiveCount, receiveCount, wantCount)
		}
		if ms, err := strconv.ParseInt(sent, 10, 64); err == nil && ms > 0 {
			if !got.SentAt.Equal(time.UnixMilli(ms)) {
				t.Fatalf("SentAt = %v for %q", got.SentAt, sent)
			}
		} else if !got.SentAt.IsZero() {
			t.Fatalf("SentAt = %v for malformed %q, want zero", got.SentAt, sent)
		}
		if got.GroupID != group {
			t.Fatalf("GroupID = %q, want %q", got.GroupID, group)
		}
		if attrName == "" {
			if len(got.MessageAttributes) != 0 {
				t.Fatalf("MessageAttributes = %v, want none", got.MessageAttributes)
			}
			return
		}
		attribute, ok := got.MessageAttributes[attrName]
		if !ok || len(got.MessageAttributes) != 1 {
			t.Fatalf("MessageAttributes = %v, want only %q", got.MessageAttributes, attrName)
		}
		if attribute.DataType != attrType || !bytes.Equal(attribute.BinaryValue, binary) {
			t.Fatalf("attribute = %+v, want type %q binary %v", attribute, attrType, binary)
		}
		if len(binary) == 0 && attribute.StringValue != attrValue {
			t.Fatalf("attribute string = %q, want %q", attribute.StringValue, attrValue)
		}
		if value, ok := got.StringAttribute(attrName); !ok || value != attribute.StringValue {
			t.Fatalf("StringAttribute(%q) = %q, %v", attrName, value, ok)
		}
	})
}
