// A root + poller worker with OpenTelemetry metrics and no Prometheus: the observer records
// into an SDK meter provider (whose exporter the user chooses; none here).
// scripts/footprint measures it.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/poller"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	provider := sdkmetric.NewMeterProvider()
	defer provider.Shutdown(context.Background())
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		log.Printf("message %s: %s", m.ID, m.Body)
		return nil
	})
	server, err := poller.New(sqs.NewFromConfig(cfg), poller.Config{QueueURL: os.Getenv("QUEUE_URL"), Observer: metrics}, handler)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
