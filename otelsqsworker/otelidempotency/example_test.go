package otelidempotency_test

import (
	"context"
	"log"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
)

// Idempotency decisions (bypassed keyless messages among them) counted on
// :9090/metrics. The package comment's snippet.
func Example() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsConfig), "jobs-idempotency")

	provider, metricsHandler, err := otelprom.New()
	if err != nil {
		log.Fatal(err)
	}
	decisions, err := otelidempotency.NewMetrics(otelidempotency.Config{MeterProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	guard := idempotency.Middleware(store, idempotency.Config{KeyOptional: true, Observer: decisions})
	http.Handle("/metrics", metricsHandler)

	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return nil // the job's side effect
	}), guard)
	_ = handler // run it with poller.New or lambda.NewHandler
}
