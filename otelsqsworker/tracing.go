package otelsqsworker

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker"
)

// Span attribute keys of the consumer spans, beside OpenTelemetry's messaging ones.
const (
	// KeyAttempt is the delivery attempt (the message's ApproximateReceiveCount: 1 for
	// the first delivery, 3 for the third, a redriven message's count included).
	KeyAttempt = attribute.Key("sqsworker.attempt")
)

// TracingConfig configures [Tracing] and [TraceInvocation].
type TracingConfig struct {
	// TracerProvider starts the spans. If nil, Tracing returns every handler unchanged:
	// no tracer, no cost. Pass otel.GetTracerProvider() to use the global one.
	TracerProvider trace.TracerProvider
	// Propagator reads the producer's trace context from the message attributes; if nil,
	// W3C Trace Context (the "traceparent" and "tracestate" String message attributes,
	// which [Sender] and package producer write). The AWSTraceHeader system attribute is
	// read with the OpenTelemetry contrib X-Ray propagator whatever this is.
	Propagator propagation.TextMapPropagator
	// Registered reports whether a job type is the program's own, as
	// MetricsConfig.Registered: only such a type is the span attribute sqsworker.job.type
	// by name, any other is [JobTypeUnregistered] (a sender's choice must not make
	// attribute values without bound). If nil, every non-empty type is unregistered.
	Registered func(jobType string) bool
	// JobType returns a message's job type; if nil, its "job-type" message attribute.
	JobType func(*sqsworker.Message) string
	// Logger receives one warning per kind of malformed trace context (message
	// attributes, AWSTraceHeader) for the life of the middleware; such messages start a
	// new trace. If nil, slog.Default().
	Logger *slog.Logger
}

// Tracing returns a middleware that runs every delivery attempt of a message in one
// consumer span, "process <queue>", following OpenTelemetry's messaging conventions
// (messaging.system aws_sqs, messaging.operation.type process, the queue, the message
// id, the attempt, the bounded job type). The span's parent is the producer's span: from
// the message's W3C trace context (message attributes), else from its AWSTraceHeader
// system attribute (X-Ray format); a message with both, of different traces, links to
// the X-Ray one. A message with neither, or with a malformed one, starts a new trace (a
// root span; one warning per malformed kind). Sampling follows the TracerProvider's
// sampler: with the default parent-based one, a producer that did not sample gets no
// consumer span either. Inside [TraceInvocation] the invocation span links to each
// record's producer span.
//
// The span ends when the handler returns, with status Error and the outcome
// (sqsworker.outcome, sqsworker.reason) for a failed attempt. The handler's context
// carries the span (and keeps its own deadline and cancellation), so messages it sends
// through a [Sender] are its children.
func Tracing(cfg TracingConfig) sqsworker.Middleware {
	if cfg.TracerProvider == nil {
		return func(next sqsworker.Handler) sqsworker.Handler { return next }
	}
	t := &tracing{
		tracer:   cfg.TracerProvider.Tracer(ScopeName),
		carriers: newCarriers(cfg.Propagator),
		jobTypes: newJobTypes(cfg.Registered),
		jobType:  cfg.JobType,
		logger:   cfg.Logger,
	}
	if t.jobType == nil {
		t.jobType = defaultJobType
	}
	if t.logger == nil {
		t.logger = slog.Default()
	}
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			return t.handle(ctx, m, next)
		})
	}
}

type tracing struct {
	tracer   trace.Tracer
	carriers carriers
	jobTypes *jobTypes
	jobType  func(*sqsworker.Message) string
	logger   *slog.Logger
	// warned once per malformed kind: message attributes, AWSTraceHeader.
	malformedAttributes, malformedHeader sync.Once
}

// consumer is the span kind option, built once: an option is an interface.
var consumer = trace.WithSpanKind(trace.SpanKindConsumer)

func (t *tracing) handle(ctx context.Context, m *sqsworker.Message, next sqsworker.Handler) error {
	producer := t.carriers.extract(ctx, m)
	t.warn(producer, m)
	queue := QueueName(m.QueueURL)
	options := make([]trace.SpanStartOption, 2, 4) // kind, attributes, parent or link
	options[0] = consumer
	attributes := []attribute.KeyValue{
		keySystem.String(systemSQS),
		attribute.String("messaging.operation.type", "process"),
		keyOperation.String("process"),
		KeyQueue.String(queue),
		attribute.String("messaging.message.id", m.ID),
		KeyAttempt.Int(m.ReceiveCount),
		KeyJobType.String(t.jobTypes.label(t.jobType(m))),
	}
	if m.GroupID != "" {
		attributes = append(attributes, attribute.String("messaging.aws.sqs.message_group_id", m.GroupID))
	}
	options[1] = trace.WithAttributes(attributes...)
	start := producer.ctx
	if producer.parent.IsValid() {
		start = trace.ContextWithRemoteSpanContext(start, producer.parent)
		if invocation, ok := start.Value(invocationKey{}).(trace.Span); ok {
			invocation.AddLink(trace.Link{SpanContext: producer.parent})
		}
	} else {
		options = append(options, trace.WithNewRoot())
	}
	if producer.link.IsValid() {
		options = append(options, trace.WithLinks(trace.Link{SpanContext: producer.link}))
	}
	_, span := t.tracer.Start(start, "process "+queue, options...)
	defer span.End()
	err := next.Handle(trace.ContextWithSpan(producer.ctx, span), m)
	outcome := sqsworker.Classify(err)
	span.SetAttributes(KeyOutcome.String(outcome.Kind.String()))
	if outcome.Failed() {
		span.SetAttributes(KeyReason.String(outcome.Reason))
		span.RecordError(err)
		span.SetStatus(codes.Error, outcome.Reason)
	}
	return err
}

// warn logs the first message of each malformed kind.
func (t *tracing) warn(producer sent, m *sqsworker.Message) {
	if producer.malformedAttributes {
		t.malformedAttributes.Do(func() {
			t.logger.Warn("otelsqsworker: a message's trace context attributes are malformed; its span starts a new trace (logged once)",
				"message_id", m.ID, "queue", m.QueueURL)
		})
	}
	if producer.malformedHeader {
		t.malformedHeader.Do(func() {
			t.logger.Warn("otelsqsworker: a message's AWSTraceHeader is malformed; it is ignored (logged once)",
				"message_id", m.ID, "queue", m.QueueURL)
		})
	}
}

// defaultJobType is the job type the ServeMux routes on.
func defaultJobType(message *sqsworker.Message) string { return message.JobType() }
