package outboxpg_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/outbox/outboxpg"
	"github.com/sqsworker/sqsworker/producer"
)

type OrderPlaced struct {
	OrderID string `json:"orderId"`
}

// An order and its webhook job in one PostgreSQL transaction, and the relay.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/shop")
	if err != nil {
		log.Fatal(err)
	}
	if err := outboxpg.Migrate(ctx, pool); err != nil { // creates sqsworker_outbox where missing
		log.Fatal(err)
	}
	box := outboxpg.New(outboxpg.Config{})

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO orders (id) VALUES ($1)", "o-1"); err != nil {
		log.Fatal(err)
	}
	if _, err := box.Enqueue(ctx, tx, queueURL, producer.Job{Type: "order-webhook", Payload: OrderPlaced{OrderID: "o-1"}}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil { // the job exists from here on, and only from here
		log.Fatal(err)
	}

	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outboxpg.NewRelay(pool, box, jobs, outboxpg.RelayConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil { // nil after a graceful stop: exit 0
		log.Fatal(err)
	}
}

const queueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/webhooks"
