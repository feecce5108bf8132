package otelsqsworker_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/otelsqsworker"
)

func spanAttribute(span sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range span.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTracingWarnsOncePerMalformedKind: three messages with a malformed traceparent and
// three with a garbage AWSTraceHeader each get a root span of a new trace, and the log
// has one warning per kind.
func TestTracingWarnsOncePerMalformedKind(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	var logs bytes.Buffer
	handler := otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider, Logger: slog.New(slog.NewTextHandler(&logs, nil))})(
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	for range 3 {
		require.NoError(t, handler.Handle(context.Background(), tracedMessage("00-xyz-01", "")))
		require.NoError(t, handler.Handle(context.Background(), tracedMessage("", "garbage")))
	}
	spans := recorder.Ended()
	require.Len(t, spans, 6)
	traces := map[trace.TraceID]bool{}
	for _, span := range spans {
		require.False(t, span.Parent().IsValid(), "a root span")
		traces[span.SpanContext().TraceID()] = true
	}
	require.Len(t, traces, 6, "each in a trace of its own")
	require.Equal(t, 1, strings.Count(logs.String(), "trace context attributes are malformed"), logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), "AWSTraceHeader is malformed"), logs.String())
	require.Equal(t, 2, strings.Count(logs.String(), "level=WARN"), logs.String())
}

// TestTracingBoundsTheJobType: the span attribute sqsworker.job.type is a registered
// type by name and any other "unregistered", so a hostile sender's types make no new
// attribute values; sqsworker.attempt is the receive count.
func TestTracingBoundsTheJobType(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("email", func(context.Context, *sqsworker.Message) error { return nil })
	handler := otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider, Registered: mux.Registered})(mux)
	for _, jobType := range []string{"email", "x-hostile-1", "x-hostile-2"} {
		m := newMessage(jobType)
		m.ReceiveCount = 3
		_ = handler.Handle(context.Background(), m)
	}
	var got []string
	for _, span := range recorder.Ended() {
		got = append(got, spanAttribute(span, otelsqsworker.KeyJobType).AsString())
		require.Equal(t, int64(3), spanAttribute(span, otelsqsworker.KeyAttempt).AsInt64())
	}
	require.Equal(t, []string{"email", otelsqsworker.JobTypeUnregistered, otelsqsworker.JobTypeUnregistered}, got)
}

// TestTracingFollowsAnUnsampledProducer: with the parent-based sampler, a message from a
// producer trace that was not sampled (flags 00, or Sampled=0 in AWSTraceHeader) exports
// no span, while a sampled one does.
func TestTracingFollowsAnUnsampledProducer(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	handler := otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider})(
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	require.NoError(t, handler.Handle(context.Background(), tracedMessage("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "")))
	require.NoError(t, handler.Handle(context.Background(), tracedMessage("", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")))
	require.Empty(t, recorder.Ended(), "no span of an unsampled producer trace")
	require.NoError(t, handler.Handle(context.Background(), tracedMessage(traceparent, "")))
	require.Len(t, recorder.Ended(), 1)
}

// TestTraceInvocationLinksEachRecord: one Lambda batch of three records from three
// producer traces: the invocation span links to the three producer spans, and each
// record's process span is its producer span's child, in its trace, with
// messaging.system aws_sqs, the message id and the attempt.
func TestTraceInvocationLinksEachRecord(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	cfg := otelsqsworker.TracingConfig{TracerProvider: provider}
	batch, err := lambda.NewBatchHandler(otelsqsworker.Tracing(cfg)(
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })))
	require.NoError(t, err)
	handler := otelsqsworker.TraceInvocation(cfg, batch.Handle)
	producers := map[string]trace.SpanContext{}
	var event events.SQSEvent
	for _, id := range []string{"r1", "r2", "r3"} {
		_, span := provider.Tracer("producer").Start(context.Background(), "send orders", trace.WithSpanKind(trace.SpanKindProducer))
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), span), carrier)
		span.End()
		producers[id] = span.SpanContext()
		value := carrier["traceparent"]
		event.Records = append(event.Records, events.SQSMessage{
			MessageId: id, Body: "{}", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders",
			Attributes:        map[string]string{"ApproximateReceiveCount": "1"},
			MessageAttributes: map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: &value}},
		})
	}
	response, err := handler(context.Background(), event)
	require.NoError(t, err)
	require.Empty(t, response.BatchItemFailures)

	var invocation sdktrace.ReadOnlySpan
	processed := map[string]sdktrace.ReadOnlySpan{}
	for _, span := range recorder.Ended() {
		switch span.Name() {
		case "invocation":
			invocation = span
		case "process orders":
			processed[spanAttribute(span, "messaging.message.id").AsString()] = span
		}
	}
	require.NotNil(t, invocation)
	require.Equal(t, trace.SpanKindConsumer, invocation.SpanKind())
	linked := map[trace.SpanID]bool{}
	for _, link := range invocation.Links() {
		linked[link.SpanContext.SpanID()] = true
	}
	require.Len(t, processed, 3)
	for id, producer := range producers {
		span := processed[id]
		require.NotNil(t, span, id)
		require.Equal(t, producer.TraceID(), span.SpanContext().TraceID(), id)
		require.Equal(t, producer.SpanID(), span.Parent().SpanID(), id)
		require.Equal(t, "aws_sqs", spanAttribute(span, "messaging.system").AsString())
		require.Equal(t, int64(1), spanAttribute(span, otelsqsworker.KeyAttempt).AsInt64())
		require.True(t, linked[producer.SpanID()], "the invocation links %s's producer span", id)
	}
	require.Len(t, invocation.Links(), 3)
}
