package main

import (
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/redrive"
)

// In-process hot paths that the packages' own benchmarks do not cover (they cover the
// poller's conversion, the Lambda batch handler and the idempotency middleware on
// MemoryStore; the root package's outcome_bench_test.go covers Classify). Run with
// `cd bench && go test -run '^$' -bench . -benchmem`.

const hotBody = `{"deliveryId":"D-1234567","order":{"id":"O-9","total":"129.90","currency":"EUR"},"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"callback":"https://example.com/hooks/orders"}`

func BenchmarkKeyFromJSONField(b *testing.B) {
	message := &sqsworker.Message{Body: hotBody}
	for _, path := range []string{"deliveryId", "order.id", "items.1.sku"} {
		keyFunc := idempotency.KeyFromJSONField(path)
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := keyFunc(message); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPayloadHash(b *testing.B) {
	message := &sqsworker.Message{Body: hotBody}
	hashes := []struct {
		name string
		hash idempotency.PayloadHashFunc
	}{
		{"HashBody", idempotency.HashBody},
		{"HashJSONFields 2 fields", idempotency.HashJSONFields("order.total", "order.currency")},
	}
	for _, h := range hashes {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.hash(message); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRedriveFilter(b *testing.B) {
	message := &sqsworker.Message{
		Body: hotBody,
		MessageAttributes: map[string]sqsworker.MessageAttribute{
			sqsworker.AttributeFailureReason: {DataType: "String", StringValue: "MalformedBody"},
		},
	}
	for _, expression := range []string{"reason:MalformedBody", "!attr:tenant=acme", "json:order.currency=EUR"} {
		filter, err := redrive.ParseFilter(expression)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expression, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				filter(message)
			}
		})
	}
}

func BenchmarkApplySystemAttributes(b *testing.B) {
	attributes := map[string]string{
		"ApproximateReceiveCount":          "3",
		"SentTimestamp":                    "1700000000000",
		"ApproximateFirstReceiveTimestamp": "1700000005000",
		"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
	}
	b.ReportAllocs()
	for b.Loop() {
		message := sqsworker.Message{Attributes: attributes}
		sqsx.ApplySystemAttributes(&message)
	}
}
