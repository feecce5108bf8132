package outboxtest

import (
	"context"
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
// the producer it is given. Run it with a fixed count (-benchtime 2000x).
func BenchmarkRelay(b *testing.B, fifo bool, write func(queueURL string, jobs []producer.Job), newRelay func(*producer.Producer) *outbox.Relay) {
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
	counter := &callCounter{Client: client}
	r := newRelay(NewProducer(b, counter))
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

// callCounter counts the SQS calls the relay's producer makes.
type callCounter struct {
	*sqs.Client
	calls atomic.Int64
}

func (c *callCounter) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.calls.Add(1)
	return c.Client.SendMessage(ctx, in, opts...)
}

func (c *callCounter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.calls.Add(1)
	return c.Client.SendMessageBatch(ctx, in, opts...)
}

func (c *callCounter) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.calls.Add(1)
	return c.Client.GetQueueAttributes(ctx, in, opts...)
}
