package otelsqsworker_test

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/scheduler"
)

// A container worker with Prometheus metrics on /metrics beside /healthz (one port),
// queue gauges read every 15 s, and a consumer span per delivery attempt. The README's
// "Metrics and traces" section in full.
func Example() {
	ctx := context.Background()
	awsConfig, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(awsConfig)
	queueURL := os.Getenv("QUEUE_URL")
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("email", func(ctx context.Context, m *sqsworker.Message) error { return nil })

	provider, metricsHandler, err := otelprom.New()
	if err != nil {
		log.Fatal(err)
	}
	// Only the mux's job types are labelled by name: any other is the sender's choice.
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: mux.Registered})
	if err != nil {
		log.Fatal(err)
	}
	gauges, err := otelsqsworker.NewQueueGauges(otelsqsworker.QueueGaugesConfig{
		Client: client, QueueURLs: []string{queueURL}, MeterProvider: provider,
	})
	if err != nil {
		log.Fatal(err)
	}
	gaugesCtx, stopGauges := context.WithCancel(ctx)
	defer stopGauges()
	go gauges.Run(gaugesCtx)

	traced := sqsworker.Chain(mux, otelsqsworker.Tracing(otelsqsworker.TracingConfig{
		TracerProvider: otel.GetTracerProvider(), // the SDK provider you configured
		Registered:     mux.Registered,           // job types by name: the mux's; others "unregistered"
	}))
	server, err := poller.New(client, poller.Config{
		QueueURL:           queueURL,
		Observer:           metrics,
		HealthCheckAddress: ":8080", // GET /healthz and GET /metrics
		MetricsHandler:     metricsHandler,
	}, traced)
	if err != nil {
		log.Fatal(err)
	}
	_ = server
}

// The README's outbox and scheduler metrics: their observers record to the same
// provider, so one /metrics serves them all.
func Example_outboxAndScheduler() {
	var relayStore *outboxdynamo.Outbox
	var dynamoClient *dynamodb.Client
	var jobs *producer.Producer
	var sqsClient *sqs.Client
	var schedules []scheduler.Schedule
	provider, metricsHandler, err := otelprom.New()
	relayMetrics, err := oteloutbox.NewMetrics(oteloutbox.Config{MeterProvider: provider})
	relay, err := outboxdynamo.NewRelay(dynamoClient, relayStore, jobs, outbox.RelayConfig{Observer: relayMetrics})
	tickMetrics, err := otelscheduler.NewMetrics(otelscheduler.Config{MeterProvider: provider})
	ticks, err := scheduler.New(sqsClient, dynamoClient, scheduler.Config{Table: "jobs", Observer: tickMetrics}, schedules)
	// serve metricsHandler (poller.Config.MetricsHandler, or http.Handle("/metrics", ...));
	// curl -s localhost:8080/metrics | grep -E 'sqsworker_(outbox|scheduler)_'
	_, _, _, _ = metricsHandler, relay, ticks, err
}

// A producer whose sends run in producer spans, their context carried to the consumers'
// process spans (Tracing), within SQS's 10 message attributes.
func ExampleNewSender() {
	var sqsClient *sqs.Client
	sender, err := otelsqsworker.NewSender(sqsClient, otelsqsworker.SenderConfig{TracerProvider: otel.GetTracerProvider()})
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sender, producer.Config{})
	_, _ = jobs, err
}

// A Lambda function with one span per invocation, linking each record's producer span,
// and a process span per record, its producer's child.
func ExampleTraceInvocation() {
	mux := sqsworker.NewServeMux()
	tracing := otelsqsworker.TracingConfig{TracerProvider: otel.GetTracerProvider(), Registered: mux.Registered}
	traced := sqsworker.Chain(mux, otelsqsworker.Tracing(tracing))
	batch, err := lambda.NewBatchHandler(traced)
	if err != nil {
		log.Fatal(err)
	}
	handler := otelsqsworker.TraceInvocation(tracing, batch.Handle)
	_ = handler // awslambda.Start(handler)
}
