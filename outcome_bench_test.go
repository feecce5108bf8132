package sqsworker

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// BenchmarkClassify measures the outcome switch both hosts run after every handler
// call, for each error shape, wrapped once with %w as handlers usually return them.
func BenchmarkClassify(b *testing.B) {
	plain := errors.New("connection reset")
	benchmarks := []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"plain", plain},
		{"wrapped plain", fmt.Errorf("delivering: %w", plain)},
		{"permanent", Permanent("MalformedBody", plain)},
		{"wrapped permanent", fmt.Errorf("decoding: %w", Permanent("MalformedBody", plain))},
		{"ErrPermanent", fmt.Errorf("decoding: %w", ErrPermanent)},
		{"defer", Defer(3*time.Second, "IdempotencyInProgress")},
		{"retry after", RetryAfter(time.Minute, plain)},
		{"panic", &PanicError{Value: "boom", Location: "x.go:1"}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			var outcome Outcome
			for b.Loop() {
				outcome = Classify(bm.err)
			}
			_ = outcome
		})
	}
}
