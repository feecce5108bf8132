package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/webhook/delivery"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/worker"
)

// Environment variables of the example itself; the runtime's own (queue, concurrency,
// timeouts, logs, Lambda settings) are read by worker.Run (see package worker).
const (
	envTable           = "SQSWORKER_IDEMPOTENCY_TABLE"
	envDeliveryTimeout = "SQSWORKER_DELIVERY_TIMEOUT"
	envMetrics         = "SQSWORKER_METRICS"
	envAllowNetworks   = "SQSWORKER_DELIVERY_ALLOW_NETWORKS"
)

// metricsPrometheus is the value of SQSWORKER_METRICS that serves the worker's
// OpenTelemetry metrics in Prometheus format at GET /metrics on SQSWORKER_HEALTH_ADDRESS.
const metricsPrometheus = "prometheus"

// Defaults of this example where they differ from the runtime's. Each applies only when
// its variable is unset, so the environment can still change it.
var (
	// defaultHandlerTimeout keeps a dead worker's idempotency lease (the handler timeout)
	// shorter than the queue's 30 s visibility timeout.
	defaultHandlerTimeout = 15 * time.Second
	// defaultBackoff retries deliveries sooner than the runtime's 2 s to 10 min.
	defaultBackoff = sqsworker.Backoff{Base: time.Second, Cap: 20 * time.Second}
)

// config is the example's own configuration, read from the environment.
type config struct {
	Table           string
	DeliveryTimeout time.Duration // 0: the delivery package's default
	// Metrics is true when SQSWORKER_METRICS=prometheus: the poller serves its metrics
	// at GET /metrics beside /healthz (see otelsqsworker).
	Metrics bool
	// AllowNetworks are the non-public networks deliveries may go to (delivery.Config);
	// empty: only public addresses.
	AllowNetworks []netip.Prefix
}

// loadConfig reads the configuration with getenv (os.Getenv in main) and reports every
// problem at once.
func loadConfig(getenv func(string) string) (config, error) {
	var problems []error
	c := config{Table: strings.TrimSpace(getenv(envTable))}
	if c.Table == "" {
		problems = append(problems, fmt.Errorf("%s is empty; the worker needs the idempotency table", envTable))
	}
	if text := strings.TrimSpace(getenv(envDeliveryTimeout)); text != "" {
		value, err := time.ParseDuration(text)
		if err != nil || value <= 0 {
			problems = append(problems, fmt.Errorf("%s=%q is not a positive duration such as 5s", envDeliveryTimeout, text))
		}
		c.DeliveryTimeout = value
	}
	if text := getenv(envAllowNetworks); strings.TrimSpace(text) != "" {
		networks, err := delivery.ParseNetworks(text)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", envAllowNetworks, err))
		}
		c.AllowNetworks = networks
	}
	switch text := strings.TrimSpace(getenv(envMetrics)); text {
	case "", "off":
	case metricsPrometheus:
		c.Metrics = true
		if strings.TrimSpace(getenv(poller.EnvHealthAddress)) == "" {
			problems = append(problems, fmt.Errorf("%s=%s needs %s, the address GET /metrics is served on", envMetrics, text, poller.EnvHealthAddress))
		}
	default:
		problems = append(problems, fmt.Errorf("%s=%q is neither %s nor off", envMetrics, text, metricsPrometheus))
	}
	return c, errors.Join(problems...)
}

// runtimeOptions are the worker.Run options of this example: its defaults where the
// environment leaves the setting unset.
func runtimeOptions(getenv func(string) string) worker.Options {
	var options worker.Options
	if strings.TrimSpace(getenv(poller.EnvHandlerTimeout)) == "" {
		options.Poller.HandlerTimeout = defaultHandlerTimeout
	}
	if strings.TrimSpace(getenv(worker.EnvBackoffBase)) == "" && strings.TrimSpace(getenv(worker.EnvBackoffCap)) == "" {
		options.Poller.Backoff = defaultBackoff
		options.Lambda = append(options.Lambda, lambda.WithBackoff(defaultBackoff))
	}
	return options
}
