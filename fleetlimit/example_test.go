package fleetlimit_test

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// The README's fleet-wide limits: at most 2 jobs of a tenant at once and 10 partner
// API calls a second, across every worker, on the worker's one table.
func ExampleLimiter_Middleware() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(awsConfig)
	queueURL, tableName := os.Getenv("QUEUE_URL"), os.Getenv("TABLE")
	mux := sqsworker.NewServeMux()

	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	limits, err := fleetlimit.New(dynamodb.NewFromConfig(awsConfig), fleetlimit.Config{
		Table:       tableName,
		Name:        "partner-api",
		Key:         func(m *sqsworker.Message) string { return m.GroupID }, // the tenant (producer.Config.Tenant)
		Concurrency: 2,                                                      // per tenant, across the fleet
		RateKey:     func(*sqsworker.Message) string { return "partner" },   // one rate over every tenant
		Rate:        10,                                                     // starts a second, across the fleet
		Hopper:      jobs, MaxReceiveCount: 5,                               // the queue's redrive policy: re-send before it dead-letters
	})
	if err != nil {
		log.Fatal(err)
	}
	worker, err := poller.New(client, poller.Config{QueueURL: queueURL}, sqsworker.Chain(mux, limits.Middleware()))
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
