// An outbox relay on DynamoDB: the container relay that publishes the entries of the
// OUTBOX_TABLE outbox. scripts/footprint measures it.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/producer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: os.Getenv("OUTBOX_TABLE")})
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outboxdynamo.NewRelay(dynamodb.NewFromConfig(cfg), box, jobs, outbox.RelayConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
