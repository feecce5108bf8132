// Package otelprom serves OpenTelemetry metrics in Prometheus' exposition format: the
// metrics of otelsqsworker, oteloutbox, otelscheduler and otelidempotency, or anything
// else recorded to its MeterProvider. It is a package of its own so that a worker that
// exports its metrics another way (OTLP, say) links neither the Prometheus client nor
// its protobuf.
//
//	provider, metricsHandler, err := otelprom.New()
//	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider,
//		Registered: mux.Registered}) // job types labelled by name: the mux's; others "unregistered"
//	server, err := poller.New(client, poller.Config{QueueURL: queueURL, Observer: metrics,
//		HealthCheckAddress: ":8080", MetricsHandler: metricsHandler}, mux)
package otelprom

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// New returns a MeterProvider whose metrics are served by handler in Prometheus'
// exposition format, from a registry of its own (not Prometheus' global one). Serve
// handler on the poller's health address with poller.Config.MetricsHandler, or mount it
// on "/metrics" of any mux. Options are passed to the MeterProvider after the exporter
// (a resource, views).
//
// Instruments are collected when Prometheus scrapes; nothing runs in between. Shut the
// provider down (provider.Shutdown) when the program ends.
func New(options ...sdkmetric.Option) (*sdkmetric.MeterProvider, http.Handler, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(registry))
	if err != nil {
		return nil, nil, fmt.Errorf("otelprom: Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exporter)}, options...)...)
	return provider, promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), nil
}
