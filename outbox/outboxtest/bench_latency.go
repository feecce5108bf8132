package outboxtest

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// BenchmarkCommitToHandler measures what a job's user feels through the outbox: b.N
// jobs, each committed in a transaction of its own by commit (called from a goroutine
// per job, at a Poisson arrival rate: OUTBOX_BENCH_RATE jobs/s, default 200), published
// by a relay (newRelay, with BenchmarkRelay's config from the environment) and handled
// by a poller (Concurrency 20, its defaults) on one standard queue. Every SQS call of the
// relay and of the poller takes OUTBOX_BENCH_LATENCY longer (±25 %). It reports the P50
// and P99 of the time from commit's return to the handler's start, in milliseconds, over
// all jobs but the first tenth (the warm-up). commit must be safe for concurrent use.
func BenchmarkCommitToHandler(b *testing.B, commit func(queueURL string, job producer.Job) outbox.Entry, newRelay func(*producer.Producer, outbox.RelayConfig) *outbox.Relay) {
	config := outbox.RelayConfig{BatchSize: benchInt(b, "OUTBOX_BENCH_BATCH", 100), InFlight: benchInt(b, "OUTBOX_BENCH_INFLIGHT", 0), ReportInterval: -1}
	rate := float64(benchInt(b, "OUTBOX_BENCH_RATE", 200))
	var latency time.Duration
	if v := os.Getenv("OUTBOX_BENCH_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil || latency < 0 {
			b.Fatalf("OUTBOX_BENCH_LATENCY %q: not a duration of at least 0", v)
		}
	}
	client := testenv.SQS(b)
	queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	slow := sqs.New(client.Options(), withLatency(latency))

	var mu sync.Mutex
	starts := map[string]time.Time{}
	handler := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		id := m.MessageAttributes[outbox.AttributeOutboxID].StringValue
		if _, seen := starts[id]; !seen {
			starts[id] = now
		}
		return nil
	})
	consumer, err := poller.New(slow, poller.Config{QueueURL: queue.URL, Concurrency: 20, AllowUnboundedRetries: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}, handler)
	if err != nil {
		b.Fatal(err)
	}
	r := newRelay(NewProducer(b, slow), config)
	ctx := context.Background()
	if err := consumer.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = r.Shutdown(stop)
		// An ended context cuts the poller's drain short: its idle long polls are
		// abandoned instead of running out their 20 s.
		ended, end := context.WithCancel(ctx)
		end()
		_ = consumer.Shutdown(ended)
	}()

	b.ResetTimer()
	committed := make([]time.Time, b.N)
	ids := make([]string, b.N)
	rng := rand.New(rand.NewPCG(1, 2))
	var commits sync.WaitGroup
	next := time.Now()
	for i := range b.N {
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		time.Sleep(time.Until(next))
		commits.Go(func() {
			entry := commit(queue.URL, Job(i))
			committed[i], ids[i] = time.Now(), entry.ID
		})
	}
	commits.Wait()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		mu.Lock()
		n := len(starts)
		mu.Unlock()
		if n >= b.N {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs handled", n, b.N)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	var latencies []time.Duration
	for i := b.N / 10; i < b.N; i++ {
		latencies = append(latencies, starts[ids[i]].Sub(committed[i]))
	}
	slices.Sort(latencies)
	at := func(q float64) float64 {
		i := min(max(int(math.Ceil(q*float64(len(latencies))))-1, 0), len(latencies)-1)
		return float64(latencies[i].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(rate, "jobs/s-offered")
}

// withLatency delays every call of a client by d ±25 % (uniform) before it is sent, as
// the network to SQS in the same region would (none when d is 0).
func withLatency(d time.Duration) func(*sqs.Options) {
	return func(o *sqs.Options) {
		if d <= 0 {
			return
		}
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("outboxtest-latency",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					timer := time.NewTimer(d*3/4 + rand.N(d/2+1))
					defer timer.Stop()
					select {
					case <-timer.C:
					case <-ctx.Done():
						return middleware.FinalizeOutput{}, middleware.Metadata{}, ctx.Err()
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}
