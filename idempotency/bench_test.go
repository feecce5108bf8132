package idempotency_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// benchmarkHandler is the middleware logging as a worker does, JSON at info level (to
// io.Discard: the formatting counts, the terminal does not).
func benchmarkHandler(store idempotency.Store) sqsworker.Handler {
	return sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, _ *sqsworker.Message) error {
		idempotency.SetResult(ctx, []byte("ok"))
		return nil
	}), idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id"),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}))
}

// BenchmarkMiddlewareNewKey measures the whole first-delivery flow on MemoryStore: key
// and hash, claim, handler, complete.
func BenchmarkMiddlewareNewKey(b *testing.B) {
	handler := benchmarkHandler(idempotency.NewMemoryStore())
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	messages := make([]*sqsworker.Message, b.N)
	for i := range messages {
		messages[i] = &sqsworker.Message{ID: strconv.Itoa(i), Body: `{"id":"k-` + strconv.Itoa(i) + `","amount":100}`}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := handler.Handle(ctx, messages[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMiddlewareDuplicateKey measures a duplicate of a completed key: key and
// hash, the failed claim with the record returned, its one info line, no handler.
func BenchmarkMiddlewareDuplicateKey(b *testing.B) {
	handler := benchmarkHandler(idempotency.NewMemoryStore())
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	message := &sqsworker.Message{ID: "m", Body: `{"id":"k","amount":100}`}
	if err := handler.Handle(ctx, message); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := handler.Handle(ctx, message); err != nil {
			b.Fatal(err)
		}
	}
}
