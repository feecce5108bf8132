package producer

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// The Emulator benchmarks send to the local emulator (make up; eval "$(localstack/env)"):
//
//	go test -run '^$' -bench . -benchtime 2000x ./producer

type benchPayload struct {
	UserID  int    `json:"userId"`
	Email   string `json:"email"`
	Comment string `json:"comment"`
}

var payload = benchPayload{UserID: 7, Email: "a@example.com", Comment: "welcome aboard"}

func BenchmarkSend(b *testing.B) {
	p := newProducer(b, newFake(), Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Send(ctx, standardURL, Job{Type: "welcome-email", Payload: payload, IdempotencyKey: "user-7"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatcherParallel(b *testing.B) {
	fake := newFake()
	benchBatcher(b, fake, standardURL, func() int { return fake.batchCalls() })
}

func BenchmarkEmulatorSend(b *testing.B) {
	client := testenv.SQS(b)
	queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	p := newProducer(b, client, Config{})
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := p.Send(ctx, queue.URL, Job{Type: "welcome-email", Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkEmulatorSendParallel is BenchmarkEmulatorBatcherParallel without the batcher:
// one SendMessage per job from the same 64 goroutines per CPU.
func BenchmarkEmulatorSendParallel(b *testing.B) {
	client := testenv.SQS(b)
	queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	p := newProducer(b, client, Config{})
	ctx := context.Background()
	b.SetParallelism(64)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Send(ctx, queue.URL, Job{Type: "ping", Body: "x"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

func BenchmarkEmulatorBatcherParallel(b *testing.B) {
	client := testenv.SQS(b)
	queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	var calls atomic.Int64
	counted := &batchCounter{API: client, calls: &calls}
	benchBatcher(b, counted, queue.URL, func() int { return int(calls.Load()) })
}

// benchBatcher sends b.N jobs from 64 goroutines per CPU through one batcher and reports
// throughput and SendMessageBatch calls per message.
func benchBatcher(b *testing.B, api API, queueURL string, batchCalls func() int) {
	p := newProducer(b, api, Config{})
	batcher, err := p.NewBatcher(queueURL, BatcherConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer batcher.Close(context.Background())
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(64)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	before := batchCalls()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := batcher.Send(ctx, Job{Type: "ping", Body: strconv.FormatInt(i, 10)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(batchCalls()-before)/float64(b.N), "calls/msg")
}

// batchCounter counts SendMessageBatch calls on the way to the emulator.
type batchCounter struct {
	API
	calls *atomic.Int64
}

func (c *batchCounter) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.calls.Add(1)
	return c.API.SendMessageBatch(ctx, input, optFns...)
}
