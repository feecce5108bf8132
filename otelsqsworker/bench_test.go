package otelsqsworker_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
)

// BenchmarkMetrics is the cost per message of the metrics observer: the four events of a
// successful message (received, started, finished, deleted), the hot path of both hosts.
func BenchmarkMetrics(b *testing.B) {
	run := func(b *testing.B, metrics *otelsqsworker.Metrics) {
		ctx := context.Background()
		m := newMessage("email")
		life(ctx, metrics, m, nil) // the attribute sets are built once
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			life(ctx, metrics, m, nil)
		}
	}
	b.Run("nop-observer-baseline", func(b *testing.B) {
		ctx := context.Background()
		m := newMessage("email")
		b.ReportAllocs()
		for b.Loop() {
			life(ctx, sqsworker.NopObserver, m, nil)
		}
	})
	b.Run("noop-provider", func(b *testing.B) {
		metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: noop.NewMeterProvider(), Registered: emailRegistered})
		if err != nil {
			b.Fatal(err)
		}
		run(b, metrics)
	})
	b.Run("sdk-reader", func(b *testing.B) {
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: emailRegistered})
		if err != nil {
			b.Fatal(err)
		}
		run(b, metrics)
	})
	b.Run("prometheus-exporter", func(b *testing.B) {
		provider, _, err := otelprom.New()
		if err != nil {
			b.Fatal(err)
		}
		metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: emailRegistered})
		if err != nil {
			b.Fatal(err)
		}
		run(b, metrics)
	})
	b.Run("sdk-reader-parallel-failures", func(b *testing.B) {
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: emailRegistered})
		if err != nil {
			b.Fatal(err)
		}
		failure := sqsworker.Permanent("BadAddress", errors.New("no such mailbox"))
		life(context.Background(), metrics, newMessage("email"), failure)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			m := newMessage("email")
			for pb.Next() {
				life(context.Background(), metrics, m, failure)
			}
		})
	})
}
