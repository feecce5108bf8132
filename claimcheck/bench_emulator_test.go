package claimcheck_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/claimcheck"
)

// heapPeak samples the live heap (runtime/metrics, /memory/classes/heap/objects:bytes)
// every millisecond until stop is called, and returns the largest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(time.Millisecond)
		defer ticker.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-ticker.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// BenchmarkTenConcurrentPayloadsOnEmulator resolves ten pointer messages at once, each
// to the same object in moto's S3, and reports the peak live heap during the ten reads
// (peak-heap-MiB) above the heap before them (base-heap-MiB). Measure with
//
//	go test -run '^$' -bench TenConcurrentPayloads -benchtime 3x ./claimcheck
//
// Cases: the default limits with 16 MiB payloads; 64 MiB payloads with MaxPayloadSize
// raised to 64 MiB and the default 64 MiB budget.
func BenchmarkTenConcurrentPayloadsOnEmulator(b *testing.B) {
	cases := []struct {
		name   string
		size   int
		config claimcheck.ResolverConfig
	}{
		{"16MiB-defaults", 16 << 20, claimcheck.ResolverConfig{}},
		{"64MiB-max-64MiB", 64 << 20, claimcheck.ResolverConfig{MaxPayloadSize: 64 << 20}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s3client := s3Client(b)
			bucket := newBucket(b, s3client)
			pointer := putObject(b, s3client, bucket, "jobs/big", strings.Repeat("x", c.size))
			config := c.config
			config.Allow = []claimcheck.Location{{Bucket: bucket, KeyPrefix: "jobs/"}}
			resolver, err := claimcheck.NewResolver(s3client, config)
			require.NoError(b, err)
			var bytes atomic.Int64
			handler := resolver.Middleware()(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
				bytes.Add(int64(len(m.Body)))
				return nil
			}))
			var peak, base uint64
			b.ResetTimer()
			for range b.N {
				runtime.GC()
				sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
				metrics.Read(sample)
				base = max(base, sample[0].Value.Uint64())
				stop := heapPeak()
				var wg sync.WaitGroup
				for i := range 10 {
					message := &sqsworker.Message{ID: strconv.Itoa(i), Body: pointer.Body(), MessageAttributes: map[string]sqsworker.MessageAttribute{
						claimcheck.AttributePayloadSize: {DataType: "Number", StringValue: strconv.Itoa(c.size)},
					}}
					wg.Go(func() {
						if err := handler.Handle(context.Background(), message); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				peak = max(peak, stop())
			}
			b.StopTimer()
			if got, want := bytes.Load(), int64(10*b.N*c.size); got != want {
				b.Fatalf("handlers got %d bytes, want %d", got, want)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(base)/(1<<20), "base-heap-MiB")
		})
	}
}
