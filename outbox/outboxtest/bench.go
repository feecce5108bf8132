package outboxtest

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// BenchmarkRelay measures a relay of a store draining a backlog of b.N committed
// entries (written with write before the timer starts, 100 per transaction) to a queue
// on the emulator, a FIFO one with the entries spread over 20 message groups when fifo
// is set: it reports entries/s and SQS calls per entry (SendMessageBatch, SendMessage
// retries and the one GetQueueAttributes). newRelay makes the relay over the store with
// the producer and the config it is given. Run it with a fixed count (-benchtime 2000x).
//
// The environment sets the run: OUTBOX_BENCH_LATENCY (a duration, say 10ms) delays
// every SQS call of the relay by that much ±25% (uniform) before it goes out, the round
// trip to SQS in the same region that the emulator on 127.0.0.1 lacks, as the bench
// module's proxy does; OUTBOX_BENCH_INFLIGHT sets RelayConfig.InFlight (default: the
// relay's default) and OUTBOX_BENCH_BATCH RelayConfig.BatchSize (default 100).
func BenchmarkRelay(b *testing.B, fifo bool, write func(queueURL string, jobs []producer.Job), newRelay func(*producer.Producer, outbox.RelayConfig) *outbox.Relay) {
	config := outbox.RelayConfig{BatchSize: benchInt(b, "OUTBOX_BENCH_BATCH", 100), InFlight: benchInt(b, "OUTBOX_BENCH_INFLIGHT", 0), ReportInterval: -1}
	var latency time.Duration
	if v := os.Getenv("OUTBOX_BENCH_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil || latency < 0 {
			b.Fatalf("OUTBOX_BENCH_LATENCY %q: not a duration of at least 0", v)
		}
	}
	client := testenv.SQS(b)
	queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true, FIFO: fifo})
	for start := 0; start < b.N; start += 100 {
		jobs := make([]producer.Job, min(100, b.N-start))
		for i := range jobs {
			jobs[i] = Job(start + i)
			if fifo {
				jobs[i].GroupID = "customer-" + strconv.Itoa((start+i)%20)
			}
		}
		write(queue.URL, jobs)
	}
	counter := &callCounter{Client: client, latency: latency}
	r := newRelay(NewProducer(b, counter), config)
	b.ResetTimer()
	started := time.Now()
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for r.Stats().Published < int64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("published %d of %d", r.Stats().Published, b.N)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(started)
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.Shutdown(ctx)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "entries/s")
	b.ReportMetric(float64(counter.calls.Load())/float64(b.N), "sqs-calls/entry")
}

func benchInt(b *testing.B, name string, otherwise int) int {
	v := os.Getenv(name)
	if v == "" {
		return otherwise
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s %q: not a number", name, v)
	}
	return n
}

// callCounter counts the SQS calls the relay's producer makes, each delayed by latency
// ±25% (none when 0).
type callCounter struct {
	*sqs.Client
	latency time.Duration
	calls   atomic.Int64
}

// call counts a call and waits its latency.
func (c *callCounter) call(ctx context.Context) {
	c.calls.Add(1)
	if c.latency <= 0 {
		return
	}
	timer := time.NewTimer(c.latency*3/4 + rand.N(c.latency/2+1))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (c *callCounter) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.call(ctx)
	return c.Client.SendMessage(ctx, in, opts...)
}

func (c *callCounter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.call(ctx)
	return c.Client.SendMessageBatch(ctx, in, opts...)
}

func (c *callCounter) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.call(ctx)
	return c.Client.GetQueueAttributes(ctx, in, opts...)
}
