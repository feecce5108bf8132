package otelsqsworker

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker"
)

// AttributeAWSTraceHeader is the SQS system attribute that carries an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1") when the
// sender was traced by X-Ray; SQS sets it and it does not count toward the 10 message
// attributes (https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sqs.html).
const AttributeAWSTraceHeader = "AWSTraceHeader"

// TracingConfig configures [Tracing].
type TracingConfig struct {
	// TracerProvider starts the spans. If nil, Tracing returns every handler unchanged:
	// no tracer, no cost. Pass otel.GetTracerProvider() to use the global one.
	TracerProvider trace.TracerProvider
	// Propagator reads the producer's trace context from the message attributes; if nil,
	// W3C Trace Context (the "traceparent" and "tracestate" String message attributes,
	// the names package producer writes).
	Propagator propagation.TextMapPropagator
	// JobType returns a message's job type (span attribute sqsworker.job.type); if nil,
	// its "job-type" message attribute.
	JobType func(*sqsworker.Message) string
}

// Tracing returns a middleware that runs every delivery attempt of a message in one
// consumer span, "process <queue>", following OpenTelemetry's messaging conventions
// (messaging.system aws_sqs, messaging.operation.type process, the queue, the message
// id, the receive count). The span continues the producer's trace from the message's
// W3C trace context; a message with only an X-Ray trace header (the AWSTraceHeader
// system attribute) continues that trace instead, and one with both links to the X-Ray
// one. The span ends when the handler returns, with status Error and the outcome
// (sqsworker.outcome, sqsworker.reason) for a failed attempt. The handler's context
// carries the span, so messages it sends continue the trace.
func Tracing(cfg TracingConfig) sqsworker.Middleware {
	if cfg.TracerProvider == nil {
		return func(next sqsworker.Handler) sqsworker.Handler { return next }
	}
	tracer := cfg.TracerProvider.Tracer(ScopeName)
	propagator := cfg.Propagator
	if propagator == nil {
		propagator = propagation.TraceContext{}
	}
	jobType := cfg.JobType
	if jobType == nil {
		jobType = defaultJobType
	}
	consumer := trace.WithSpanKind(trace.SpanKindConsumer) // built once: an option is an interface
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			parent := propagator.Extract(ctx, attributeCarrier{m})
			options := make([]trace.SpanStartOption, 1, 4) // kind, link, attributes, group
			options[0] = consumer
			if xray, ok := parseAWSTraceHeader(m.Attributes[AttributeAWSTraceHeader]); ok {
				if trace.SpanContextFromContext(parent).IsValid() {
					options = append(options, trace.WithLinks(trace.Link{SpanContext: xray}))
				} else {
					parent = trace.ContextWithRemoteSpanContext(parent, xray)
				}
			}
			queue := QueueName(m.QueueURL)
			options = append(options, trace.WithAttributes(
				attribute.String("messaging.system", "aws_sqs"),
				attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.operation.name", "process"),
				KeyQueue.String(queue),
				attribute.String("messaging.message.id", m.ID),
				attribute.Int("sqsworker.receive_count", m.ReceiveCount),
				KeyJobType.String(jobType(m)),
			))
			if m.GroupID != "" {
				options = append(options, trace.WithAttributes(attribute.String("messaging.aws.sqs.message_group_id", m.GroupID)))
			}
			_, span := tracer.Start(parent, "process "+queue, options...)
			defer span.End()
			// The handler keeps its own context's deadline and cancellation; only the
			// span comes from the producer's trace.
			err := next.Handle(trace.ContextWithSpan(ctx, span), m)
			outcome := sqsworker.Classify(err)
			span.SetAttributes(KeyOutcome.String(outcome.Kind.String()))
			if outcome.Failed() {
				span.SetAttributes(KeyReason.String(outcome.Reason))
				span.RecordError(err)
				span.SetStatus(codes.Error, outcome.Reason)
			}
			return err
		})
	}
}

// defaultJobType is the job type the ServeMux routes on.
func defaultJobType(message *sqsworker.Message) string { return message.JobType() }

// attributeCarrier reads a message's String message attributes as a propagation carrier.
type attributeCarrier struct{ m *sqsworker.Message }

func (c attributeCarrier) Get(key string) string {
	value, _ := c.m.StringAttribute(key)
	return value
}

// Set is not used: the consumer only reads.
func (c attributeCarrier) Set(string, string) {}

func (c attributeCarrier) Keys() []string {
	keys := make([]string, 0, len(c.m.MessageAttributes))
	for key := range c.m.MessageAttributes {
		keys = append(keys, key)
	}
	return keys
}

// parseAWSTraceHeader reads an X-Ray trace header: Root=1-<8 hex time>-<24 hex id>,
// Parent=<16 hex span id>, Sampled=0|1, in any order, separated by ';'
// (https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader).
// It reports false when Root or Parent is missing or malformed.
func parseAWSTraceHeader(header string) (trace.SpanContext, bool) {
	if header == "" {
		return trace.SpanContext{}, false
	}
	var config trace.SpanContextConfig
	var haveRoot, haveParent bool
	for part := range strings.SplitSeq(header, ";") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "Root":
			version, rest, ok := strings.Cut(value, "-")
			epoch, random, ok2 := strings.Cut(rest, "-")
			if !ok || !ok2 || version != "1" || len(epoch) != 8 || len(random) != 24 {
				return trace.SpanContext{}, false
			}
			if _, err := hex.Decode(config.TraceID[:], []byte(epoch+random)); err != nil {
				return trace.SpanContext{}, false
			}
			haveRoot = true
		case "Parent":
			if len(value) != 16 {
				return trace.SpanContext{}, false
			}
			if _, err := hex.Decode(config.SpanID[:], []byte(value)); err != nil {
				return trace.SpanContext{}, false
			}
			haveParent = true
		case "Sampled":
			if sampled, err := strconv.ParseBool(value); err == nil && sampled {
				config.TraceFlags = trace.FlagsSampled
			}
		}
	}
	config.Remote = true
	spanContext := trace.NewSpanContext(config)
	return spanContext, haveRoot && haveParent && spanContext.IsValid()
}
