package otelsqsworker

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// NewPrometheus returns a MeterProvider whose metrics are served by handler in
// Prometheus' exposition format, from a registry of its own (not Prometheus' global
// one). Serve handler on the poller's health address with poller.Config.MetricsHandler:
//
//	provider, handler, err := otelsqsworker.NewPrometheus()
//	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: mux.Registered})
//	server, err := poller.New(client, poller.Config{..., Observer: metrics,
//		HealthCheckAddress: ":8080", MetricsHandler: handler}, h)
//
// Instruments are collected when Prometheus scrapes; nothing runs in between. Shut the
// provider down (provider.Shutdown) when the program ends.
func NewPrometheus(options ...sdkmetric.Option) (*sdkmetric.MeterProvider, http.Handler, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(registry))
	if err != nil {
		return nil, nil, fmt.Errorf("otelsqsworker: Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exporter)}, options...)...)
	return provider, promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), nil
}
