package otelprom_test

import (
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/poller"
)

// A poller serving its metrics in Prometheus' format on /metrics beside /healthz. The
// README's Prometheus snippet and the package comment's.
func Example() {
	var client *sqs.Client
	var queueURL string
	mux := sqsworker.NewServeMux()
	provider, metricsHandler, err := otelprom.New()
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider,
		Registered: mux.Registered}) // job types labelled by name: the mux's; others "unregistered"
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, Observer: metrics,
		HealthCheckAddress: ":8080", MetricsHandler: metricsHandler}, mux)
	// curl -s localhost:8080/metrics | grep sqsworker_messages_finished_total
	_, _ = server, err
}
