package lambda

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzToMessageJSON decodes one event record as the Lambda runtime hands it over (JSON)
// and converts it. It must never panic, and the conversion must carry the record's id,
// body, receipt handle, source ARN, receive count, sent time, group id and message
// attributes through unchanged (a missing, malformed or non-positive receive count
// becomes 1). Seeds are in testdata/fuzz/FuzzToMessageJSON.
func FuzzToMessageJSON(f *testing.F) {
	f.Add([]byte(`{"messageId":"m1","receiptHandle":"r1","body":"{\"order\":\"A-1\"}","attributes":{"ApproximateReceiveCount":"2","SentTimestamp":"1545082649183","MessageGroupId":"g"},"messageAttributes":{"type":{"stringValue":"order.created","dataType":"String"}},"eventSourceARN":"arn:aws:sqs:us-east-2:123456789012:orders.fifo"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"messageId":"","attributes":null,"messageAttributes":{"b":{"binaryValue":"AAEC","dataType":"Binary"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var record events.SQSMessage
		if err := json.Unmarshal(data, &record); err != nil {
			return
		}
		url := queueURLFromARN(record.EventSourceARN)
		got := toMessage(&record, url)

		if got.ID != record.MessageId || got.Body != record.Body || got.ReceiptHandle != record.ReceiptHandle {
			t.Fatalf("id/body/receipt = %q/%q/%q, want %q/%q/%q", got.ID, got.Body, got.ReceiptHandle, record.MessageId, record.Body, record.ReceiptHandle)
		}
		if got.QueueARN != record.EventSourceARN || got.QueueURL != url {
			t.Fatalf("queue = %q/%q, want %q/%q", got.QueueARN, got.QueueURL, record.EventSourceARN, url)
		}
		checkQueueURL(t, record.EventSourceARN, url)
		wantCount := 1
		if n, err := strconv.Atoi(record.Attributes["ApproximateReceiveCount"]); err == nil && n >= 1 {
			wantCount = n
		}
		if got.ReceiveCount != wantCount {
			t.Fatalf("ReceiveCount = %d for %q, want %d", got.ReceiveCount, record.Attributes["ApproximateReceiveCount"], wantCount)
		}
		if ms, err := strconv.ParseInt(record.Attributes["SentTimestamp"], 10, 64); err == nil && ms > 0 && !got.SentAt.Equal(time.UnixMilli(ms)) {
			t.Fatalf("SentAt = %v, want %d ms", got.SentAt, ms)
		}
		if group := record.Attributes["MessageGroupId"]; group != "" && got.GroupID != group {
			t.Fatalf("GroupID = %q, want %q", got.GroupID, group)
		}
		if len(got.MessageAttributes) != len(record.MessageAttributes) {
			t.Fatalf("%d message attributes, want %d", len(got.MessageAttributes), len(record.MessageAttributes))
		}
		for name, want := range record.MessageAttributes {
			attribute := got.MessageAttributes[name]
			wantString := ""
			if want.StringValue != nil {
				wantString = *want.StringValue
			}
			if attribute.DataType != want.DataType || attribute.StringValue != wantString || !bytes.Equal(attribute.BinaryValue, want.BinaryValue) {
				t.Fatalf("attribute %q = %+v, want %+v", name, attribute, want)
			}
		}
		// The same record converted twice gives equal messages (no shared mutable state
		// other than the attributes map, which is shared by design).
		again := toMessage(&record, url)
		if again.ID != got.ID || again.ReceiveCount != got.ReceiveCount || again.GroupID != got.GroupID {
			t.Fatalf("second conversion differs: %+v vs %+v", again, got)
		}
	})
}

// FuzzQueueURLFromARN checks that an ARN yields a URL exactly when it has the six
// fields of an SQS ARN, and that the URL ends in ACCOUNT/NAME.
func FuzzQueueURLFromARN(f *testing.F) {
	f.Add("arn:aws:sqs:us-east-2:123456789012:orders")
	f.Add("arn:aws-cn:sqs:cn-north-1:123456789012:orders.fifo")
	f.Add("arn:aws:sns:us-east-2:123456789012:orders")
	f.Add(":::::")
	f.Fuzz(func(t *testing.T, arn string) {
		checkQueueURL(t, arn, queueURLFromARN(arn))
	})
}

func checkQueueURL(t *testing.T, arn, url string) {
	t.Helper()
	parts := strings.Split(arn, ":")
	valid := len(parts) == 6 && parts[0] == "arn" && parts[2] == "sqs" && parts[3] != "" && parts[4] != "" && parts[5] != ""
	if valid != (url != "") {
		t.Fatalf("queueURLFromARN(%q) = %q; valid ARN: %v", arn, url, valid)
	}
	if valid && (!strings.HasPrefix(url, "https://sqs."+parts[3]+".") || !strings.HasSuffix(url, "/"+parts[4]+"/"+parts[5])) {
		t.Fatalf("queueURLFromARN(%q) = %q", arn, url)
	}
}
