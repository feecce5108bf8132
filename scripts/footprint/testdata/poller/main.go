// A root + poller worker: one handler on one queue (QUEUE_URL), the smallest container
// worker a user writes. scripts/footprint measures it; scripts/install-check builds it from a
// scratch module against the served modules.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/poller"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		log.Printf("message %s: %s", m.ID, m.Body)
		return nil
	})
	server, err := poller.New(sqs.NewFromConfig(cfg), poller.Config{QueueURL: os.Getenv("QUEUE_URL")}, handler)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
