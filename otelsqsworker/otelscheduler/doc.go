// Package otelscheduler records OpenTelemetry metrics of a scheduler replica (package
// github.com/sqsworker/sqsworker/scheduler): ticks by schedule and outcome, the tick
// delay and leadership. It is a package of its own so that a worker importing
// otelsqsworker does not link the scheduler. [Metrics] lists the instruments.
//
//	provider, metricsHandler, err := otelprom.New()
//	tickMetrics, err := otelscheduler.NewMetrics(otelscheduler.Config{MeterProvider: provider})
//	ticks, err := scheduler.New(sqsClient, dynamoClient, scheduler.Config{
//		Table: "jobs-idempotency", Observer: tickMetrics}, schedules)
//	http.Handle("/metrics", metricsHandler)
package otelscheduler
