package oteloutbox_test

import (
	"context"
	"log"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/producer"
)

// A DynamoDB relay whose metrics Prometheus scrapes on :9090/metrics. The package
// comment's snippet.
func Example() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqs.NewFromConfig(awsConfig), producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: "orders-outbox"})
	if err != nil {
		log.Fatal(err)
	}

	provider, metricsHandler, err := otelprom.New()
	if err != nil {
		log.Fatal(err)
	}
	relayMetrics, err := oteloutbox.NewMetrics(oteloutbox.Config{MeterProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outboxdynamo.NewRelay(dynamodb.NewFromConfig(awsConfig), box, jobs,
		outbox.RelayConfig{Observer: relayMetrics})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", metricsHandler)
	go func() { log.Fatal(http.ListenAndServe(":9090", nil)) }()
	if err := relay.Run(ctx); err != nil { // nil after a graceful stop: exit 0
		log.Fatal(err)
	}
}
