// Package otelsqsworker instruments sqsworker with OpenTelemetry, in a module of its own
// so that the library's go.mod does not require OpenTelemetry:
//
//   - [Metrics] is a sqsworker.Observer recording every message's life on either host
//     (messages finished by outcome and reason, handler duration and receive lag
//     histograms, in flight, heartbeats, deletes, dead-letter sends, abandoned
//     handlers), with label values bounded whatever senders write into messages (only
//     the mux's job types by name, see MetricsConfig.Registered). Per message it costs
//     two histogram records through the SDK and a few atomic adds, with no allocation
//     (BenchmarkMetrics; figures in docs/benchmarks.md);
//   - with MetricsConfig.MessagingConventions or OTEL_SEMCONV_STABILITY_OPT_IN
//     ([OptInEnv]), OpenTelemetry's messaging metrics beside the project's; [Sender]
//     records the producer's (sent messages, send duration, batch sizes);
//   - [QueueGauges] reads each queue's depth, in flight, delayed and dead-letter depth
//     with one GetQueueAttributes per queue per interval (15 s by default);
//   - [Tracing] runs each delivery attempt in a consumer span whose parent is the
//     producer's span (W3C trace context or X-Ray trace header); [TraceInvocation] adds a
//     Lambda invocation span linking each record's producer; [Sender] runs each send in
//     a producer span and injects its context without passing SQS's 10 attributes; with
//     no TracerProvider they change nothing;
//   - package [github.com/sqsworker/sqsworker/otelsqsworker/otelprom] serves everything
//     recorded to its MeterProvider in Prometheus' format, beside the poller's /healthz
//     (a package of its own: a worker exporting otherwise links no Prometheus client).
//
// A container worker with Prometheus metrics and a span per delivery attempt:
//
//	provider, metricsHandler, err := otelprom.New()
//	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider,
//		Registered: mux.Registered}) // job types labelled by name: the mux's; others "unregistered"
//	traced := sqsworker.Chain(mux, otelsqsworker.Tracing(otelsqsworker.TracingConfig{
//		TracerProvider: otel.GetTracerProvider()}))
//	server, err := poller.New(client, poller.Config{QueueURL: queueURL, Observer: metrics,
//		HealthCheckAddress: ":8080", MetricsHandler: metricsHandler}, traced)
//
// The outbox relays and the scheduler have observers of their own, in packages of
// their own so that a worker importing this one links neither the outbox's PostgreSQL
// driver nor the scheduler: [github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox]
// (entries published, refused and retried, outbox lag, backlog and oldest entry's age)
// and [github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler] (ticks by schedule
// and outcome, tick delay, leadership). The idempotency middleware's decisions (claimed,
// deferred, bypassed, ...) are counted by
// [github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency], for the same reason
// (it links the DynamoDB client).
package otelsqsworker
