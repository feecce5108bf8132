package outboxpg

import (
	"context"
	"strconv"
	"testing"

	"github.com/sqsworker/sqsworker/outbox/outboxtest"
)

// BenchmarkEnqueue measures the writer's side of the FIFO group lock: a
// transaction of one order row and one entry, for a standard queue (no lock) and for a
// FIFO queue, each transaction in a group of its own (the lock taken, never waited
// for), on the local PostgreSQL. Compare the two in one run:
//
//	go test -run '^$' -bench BenchmarkEnqueue -benchtime 2000x ./outbox/outboxpg
func BenchmarkEnqueue(b *testing.B) {
	for _, name := range []string{"standard", "fifo"} {
		b.Run(name, func(b *testing.B) {
			pool, _ := newSchemaPool(b, 4)
			box := New(Config{})
			queueURL := "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
			if name == "fifo" {
				queueURL += ".fifo"
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				job := outboxtest.Job(i)
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
