// Package oteloutbox records OpenTelemetry metrics of outbox relays (package
// github.com/sqsworker/sqsworker/outbox): entries published, refused and retried, the
// outbox lag, the backlog and the age of its oldest entry. It is a package of its own so
// that a worker importing otelsqsworker does not link the outbox.
// [Metrics] lists the instruments.
//
//	provider, metricsHandler, err := otelprom.New()
//	relayMetrics, err := oteloutbox.NewMetrics(oteloutbox.Config{MeterProvider: provider})
//	relay, err := outboxdynamo.NewRelay(dynamodb.NewFromConfig(awsConfig), box, jobs,
//		outbox.RelayConfig{Observer: relayMetrics})
//	http.Handle("/metrics", metricsHandler)
package oteloutbox
