package otelsqsworker_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
)

const (
	traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	xrayHeader  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
)

func tracedMessage(traceParent, awsTraceHeader string) *sqsworker.Message {
	m := newMessage("email")
	if traceParent != "" {
		m.MessageAttributes["traceparent"] = sqsworker.MessageAttribute{DataType: "String", StringValue: traceParent}
	}
	if awsTraceHeader != "" {
		m.Attributes = map[string]string{otelsqsworker.AttributeAWSTraceHeader: awsTraceHeader}
	}
	return m
}

func TestTracingSpans(t *testing.T) {
	tests := []struct {
		name            string
		message         *sqsworker.Message
		err             error
		wantTrace       string
		wantParent      string
		wantLinkedTrace string
		wantStatus      codes.Code
	}{
		{"W3C parent", tracedMessage(traceparent, ""), nil, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "", codes.Unset},
		{"X-Ray only", tracedMessage("", xrayHeader), nil, "5759e988bd862e3fe1be46a994272793", "53995c3f42cd8ad8", "", codes.Unset},
		{"both: X-Ray linked", tracedMessage(traceparent, xrayHeader), nil, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "5759e988bd862e3fe1be46a994272793", codes.Unset},
		{"malformed X-Ray header: a new root", tracedMessage("", "Root=1-zz;Parent=1"), nil, "", "", "", codes.Unset},
		{"malformed traceparent: a new root", tracedMessage("00-xyz-01", ""), nil, "", "", "", codes.Unset},
		{"garbage AWSTraceHeader: a new root", tracedMessage("", "garbage"), nil, "", "", "", codes.Unset},
		{"permanent failure", tracedMessage(traceparent, ""), sqsworker.Permanent("Invalid", errors.New("bad")), "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "", codes.Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recorder := tracetest.NewSpanRecorder()
			provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
			var inHandler trace.SpanContext
			handler := otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider, Logger: slog.New(slog.DiscardHandler)})(
				sqsworker.HandlerFunc(func(ctx context.Context, _ *sqsworker.Message) error {
					inHandler = trace.SpanContextFromContext(ctx)
					return tc.err
				}))
			require.Equal(t, tc.err, handler.Handle(context.Background(), tc.message))
			spans := recorder.Ended()
			require.Len(t, spans, 1)
			span := spans[0]
			require.Equal(t, "process orders", span.Name())
			require.Equal(t, trace.SpanKindConsumer, span.SpanKind())
			require.Equal(t, span.SpanContext(), inHandler, "the handler's context carries the span")
			if tc.wantTrace != "" {
				require.Equal(t, tc.wantTrace, span.SpanContext().TraceID().String())
				require.Equal(t, tc.wantParent, span.Parent().SpanID().String())
			} else {
				require.False(t, span.Parent().IsValid())
			}
			if tc.wantLinkedTrace != "" {
				require.Len(t, span.Links(), 1)
				require.Equal(t, tc.wantLinkedTrace, span.Links()[0].SpanContext.TraceID().String())
			} else {
				require.Empty(t, span.Links())
			}
			require.Equal(t, tc.wantStatus, span.Status().Code)
		})
	}
}

// BenchmarkTracing is the cost per delivery attempt of the tracing middleware.
func BenchmarkTracing(b *testing.B) {
	run := func(b *testing.B, provider trace.TracerProvider) {
		handler := otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider})(
			sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
		m := tracedMessage(traceparent, "")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_ = handler.Handle(ctx, m)
		}
	}
	b.Run("no-tracer", func(b *testing.B) { run(b, nil) })
	b.Run("noop-provider", func(b *testing.B) { run(b, noop.NewTracerProvider()) })
	b.Run("sdk-sampled", func(b *testing.B) {
		run(b, sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())))
	})
	b.Run("sdk-never-sample", func(b *testing.B) {
		run(b, sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
	})
}
