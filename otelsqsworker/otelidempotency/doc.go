// Package otelidempotency records OpenTelemetry metrics of the idempotency middleware
// (package github.com/sqsworker/sqsworker/idempotency): its decisions by kind (claimed,
// completed duplicate, deferred, bypassed for a missing key, ...). It is a package of
// its own so that a worker importing otelsqsworker does not link the idempotency
// package's DynamoDB client. [Metrics] lists the instruments.
//
//	provider, metricsHandler, err := otelprom.New()
//	decisions, err := otelidempotency.NewMetrics(otelidempotency.Config{MeterProvider: provider})
//	guard := idempotency.Middleware(store, idempotency.Config{KeyOptional: true, Observer: decisions})
//	http.Handle("/metrics", metricsHandler)
package otelidempotency
