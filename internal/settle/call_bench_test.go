package settle_test

import (
	"context"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// BenchmarkCallHandler measures the panic-recovering call both hosts make per message,
// for a handler that returns and one that panics.
func BenchmarkCallHandler(b *testing.B) {
	ctx := context.Background()
	message := &sqsworker.Message{ID: "m", Body: "{}"}
	ok := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	panics := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { panic("boom") })
	b.Run("returns", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = settle.Call(ctx, ok, message)
		}
	})
	b.Run("panics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = settle.Call(ctx, panics, message)
		}
	})
}
