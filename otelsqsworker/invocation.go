package otelsqsworker

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// invocationKey is the context key of the span of a Lambda invocation.
type invocationKey struct{}

// TraceInvocation wraps a Lambda function's handler (a lambda.BatchHandler's Handle, or
// any other) in one consumer span per invocation, named after the function
// (AWS_LAMBDA_FUNCTION_NAME, "invocation" outside Lambda), with messaging.system aws_sqs
// and faas.trigger pubsub. [Tracing] inside it gives each record's process span its
// producer's span as parent and adds a link to that producer span on the invocation
// span, so a batch of records from many traces shows in each of them and in the
// invocation's. With a nil TracerProvider it returns handler unchanged.
//
//	tracing := otelsqsworker.TracingConfig{TracerProvider: otel.GetTracerProvider(), Registered: mux.Registered}
//	traced := sqsworker.Chain(mux, otelsqsworker.Tracing(tracing))
//	batch, err := lambda.NewBatchHandler(traced)
//	handler := otelsqsworker.TraceInvocation(tracing, batch.Handle)
//	// awslambda.Start(handler), with aws-lambda-go's lambda package
func TraceInvocation[Event, Response any](cfg TracingConfig, handler func(context.Context, Event) (Response, error)) func(context.Context, Event) (Response, error) {
	if cfg.TracerProvider == nil {
		return handler
	}
	tracer := cfg.TracerProvider.Tracer(ScopeName)
	name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	if name == "" {
		name = "invocation"
	}
	options := []trace.SpanStartOption{consumer, trace.WithAttributes(
		keySystem.String(systemSQS),
		attribute.String("faas.trigger", "pubsub"),
		attribute.String("messaging.operation.type", "process"),
	)}
	return func(ctx context.Context, event Event) (Response, error) {
		ctx, span := tracer.Start(ctx, name, options...)
		defer span.End()
		response, err := handler(context.WithValue(ctx, invocationKey{}, span), event)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		return response, err
	}
}
