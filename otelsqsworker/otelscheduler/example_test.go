package otelscheduler_test

import (
	"context"
	"log"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler"
	"github.com/sqsworker/sqsworker/scheduler"
)

// A scheduler replica whose metrics Prometheus scrapes on :9090/metrics. The package
// comment's snippet.
func Example() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	schedules, err := scheduler.ReadSchedules("schedules.json")
	if err != nil {
		log.Fatal(err)
	}

	provider, metricsHandler, err := otelprom.New()
	if err != nil {
		log.Fatal(err)
	}
	tickMetrics, err := otelscheduler.NewMetrics(otelscheduler.Config{MeterProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	ticks, err := scheduler.New(sqs.NewFromConfig(awsConfig), dynamodb.NewFromConfig(awsConfig), scheduler.Config{
		Table: "jobs-idempotency", Observer: tickMetrics}, schedules)
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", metricsHandler)
	go func() { log.Fatal(http.ListenAndServe(":9090", nil)) }()
	if err := ticks.Run(ctx); err != nil { // nil after a graceful stop: exit 0
		log.Fatal(err)
	}
}
