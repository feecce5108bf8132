package outbox

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

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

// BenchmarkRelay measures a relay draining a backlog of b.N committed entries (written
// before the timer starts, 100 per transaction) to a standard queue on the emulator:
// entries/s and SQS calls per entry (SendMessageBatch, SendMessage retries and the one
// GetQueueAttributes). Run it with a fixed count, for example:
//
//	make bench-outbox   (eval "$(localstack/env)" && go test -run '^$' -bench BenchmarkRelay -benchtime 2000x ./outbox)
//
// The "-fifo" variant sends to a FIFO queue, the entries spread over 20 message groups
// (a call carries at most one entry per group).
func BenchmarkRelay(b *testing.B) {
	for _, name := range []string{"dynamodb", "postgres", "postgres-fifo"} {
		b.Run(name, func(b *testing.B) {
			store, fifo := strings.CutSuffix(name, "-fifo")
			client := testenv.SQS(b)
			queue := testenv.NewQueue(b, client, testenv.QueueOptions{NoDeadLetterQueue: true, FIFO: fifo})
			write, relay := benchStore(b, store)
			for start := 0; start < b.N; start += 100 {
				jobs := make([]producer.Job, min(100, b.N-start))
				for i := range jobs {
					jobs[i] = webhookJob(start + i)
					if fifo {
						jobs[i].GroupID = "customer-" + strconv.Itoa((start+i)%20)
					}
				}
				write(queue.URL, jobs)
			}
			counter := &callCounter{Client: client}
			p, err := producer.New(counter, producer.Config{})
			if err != nil {
				b.Fatal(err)
			}
			r := relay(p)
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
		})
	}
}

// benchStore returns the writer and the relay constructor of a store for the benchmark.
func benchStore(b *testing.B, store string) (func(string, []producer.Job), func(*producer.Producer) *Relay) {
	config := RelayConfig{BatchSize: 100, ReportInterval: -1}
	switch store {
	case "dynamodb":
		client := testenv.DynamoDB(b)
		o := newOutboxTable(b, client, DynamoDBConfig{})
		return func(queueURL string, jobs []producer.Job) {
				items, _, err := o.TransactItems(nil, queueURL, jobs...)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := client.TransactWriteItems(context.Background(), dynamodbTransact{items}.input()); err != nil {
					b.Fatal(err)
				}
			}, func(p *producer.Producer) *Relay {
				r, err := NewDynamoDBRelay(client, o, p, config)
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
	default:
		pool, _ := newSchemaPool(b, 8)
		o := NewPostgres(PostgresConfig{})
		return func(queueURL string, jobs []producer.Job) {
				ctx := context.Background()
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := o.Enqueue(ctx, tx, queueURL, jobs...); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}, func(p *producer.Producer) *Relay {
				r, err := NewPostgresRelay(pool, o, p, PostgresRelayConfig{RelayConfig: config})
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
	}
}

// BenchmarkPostgresEnqueue measures the writer's side of the FIFO group lock: a
// transaction of one order row and one entry, for a standard queue (no lock) and for a
// FIFO queue, each transaction in a group of its own (the lock taken, never waited
// for), on the local PostgreSQL. Compare the two in one run:
//
//	go test -run '^$' -bench BenchmarkPostgresEnqueue -benchtime 2000x ./outbox
func BenchmarkPostgresEnqueue(b *testing.B) {
	for _, name := range []string{"standard", "fifo"} {
		b.Run(name, func(b *testing.B) {
			pool, _ := newSchemaPool(b, 4)
			box := NewPostgres(PostgresConfig{})
			queueURL := "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
			if name == "fifo" {
				queueURL += ".fifo"
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				job := webhookJob(i)
				if name == "fifo" {
					job.GroupID = "customer-" + strconv.Itoa(i)
				}
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO orders (note) VALUES ('an order')"); err != nil {
					b.Fatal(err)
				}
				if _, err := box.Enqueue(ctx, tx, queueURL, job); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
