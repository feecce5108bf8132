package sqsx_test

import (
	"strconv"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// FuzzApplySystemAttributes checks that reading the system attributes never panics,
// always leaves a receive count of at least 1, reads a valid count exactly, and is
// idempotent (applying twice changes nothing).
func FuzzApplySystemAttributes(f *testing.F) {
	f.Add("3", "1700000000000", "1700000005000", "group", "dedup")
	f.Add("", "", "", "", "")
	f.Add("-1", "-5", "abc", "", "")
	f.Add("0x10", "9223372036854775807", "1", "g", "")
	f.Fuzz(func(t *testing.T, receiveCount, sent, firstReceive, group, deduplication string) {
		message := &sqsworker.Message{Attributes: map[string]string{
			"ApproximateReceiveCount":          receiveCount,
			"SentTimestamp":                    sent,
			"ApproximateFirstReceiveTimestamp": firstReceive,
			"MessageGroupId":                   group,
			"MessageDeduplicationId":           deduplication,
		}}
		sqsx.ApplySystemAttributes(message)
		if message.ReceiveCount < 1 {
			t.Fatalf("ReceiveCount %d below 1 for %q", message.ReceiveCount, receiveCount)
		}
		if n, err := strconv.Atoi(receiveCount); err == nil && n >= 1 && message.ReceiveCount != n {
			t.Fatalf("ReceiveCount %d, want %d", message.ReceiveCount, n)
		}
		if message.GroupID != group || message.DeduplicationID != deduplication {
			t.Fatalf("group/dedup %q/%q, want %q/%q", message.GroupID, message.DeduplicationID, group, deduplication)
		}
		before := *message
		sqsx.ApplySystemAttributes(message)
		if message.ReceiveCount != before.ReceiveCount || !message.SentAt.Equal(before.SentAt) || !message.FirstReceivedAt.Equal(before.FirstReceivedAt) {
			t.Fatalf("second application changed the message: %+v vs %+v", message, before)
		}
		if message.SinceFirstReceive(message.FirstReceivedAt) != 0 {
			t.Fatal("SinceFirstReceive at the first receive is not 0")
		}
	})
}
