package otelsqsworker

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys and values of OpenTelemetry's messaging conventions
// (https://opentelemetry.io/docs/specs/semconv/messaging/), for spans and metrics.
const (
	keySystem    = attribute.Key("messaging.system")
	keyOperation = attribute.Key("messaging.operation.name")
	keyErrorType = attribute.Key("error.type")
	systemSQS    = "aws_sqs"
)

// SendAPI is the part of the SQS client a producer sends with: *sqs.Client satisfies
// it, and so does [*Sender], which package producer takes as its producer.API.
type SendAPI interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// SenderConfig configures [NewSender].
type SenderConfig struct {
	// TracerProvider starts the producer spans. If nil, no span is started and nothing
	// is injected (the messages carry what the producer put in them).
	TracerProvider trace.TracerProvider
	// Propagator writes the span context into message attributes; if nil, W3C Trace
	// Context ("traceparent", "tracestate"), what [Tracing] reads by default.
	Propagator propagation.TextMapPropagator
	// MeterProvider records the send metrics; if nil, otel.GetMeterProvider(). They are
	// OpenTelemetry's messaging client metrics, with messaging.system aws_sqs,
	// messaging.operation.name send and the queue (messaging.destination.name):
	// messaging.client.sent.messages {message}, every message a call tried to send, with
	// error.type for the failed ones (the AWS error code of a failed call or of a refused
	// batch entry, "timeout", "canceled"); messaging.client.operation.duration (s)
	// histogram, per call, with error.type for a failed one ("BatchEntryFailed" for a
	// batch with refused entries); and sqsworker.producer.batch.size {message}
	// histogram, the entries of each SendMessageBatch.
	MeterProvider metric.MeterProvider
}

// Sender is an SQS client for package producer that traces and measures every send
// (metrics: SenderConfig.MeterProvider). Each SendMessage or SendMessageBatch call runs
// in a producer span, "send <queue>" (messaging.system aws_sqs, messaging.operation.type
// send, the queue, the message id or the batch's size), a child of the caller's span,
// and each message carries that span's context so that its consumer's process span
// ([Tracing]) is the send span's child:
//
//	sender, err := otelsqsworker.NewSender(sqsClient, otelsqsworker.SenderConfig{TracerProvider: tracerProvider})
//	jobs, err := producer.New(sender, producer.Config{})
//
// The context goes in W3C message attributes when they fit in SQS's 10 with the
// message's own; when they do not, it goes in the AWSTraceHeader system attribute (X-Ray
// format), which SQS does not count, and a context the message already carried in
// attributes (the one of the message being handled) is overwritten. No send ever gets
// an eleventh attribute or fails for tracing. Sender is safe for concurrent use.
type Sender struct {
	api      SendAPI
	tracer   trace.Tracer // nil without a TracerProvider
	carriers carriers
	metrics  *senderMetrics
}

// NewSender returns a Sender sending through api. It returns an error for a nil api, or
// when the meter refuses an instrument.
func NewSender(api SendAPI, cfg SenderConfig) (*Sender, error) {
	if api == nil {
		return nil, errNilSendAPI
	}
	metrics, err := newSenderMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	s := &Sender{api: api, carriers: newCarriers(cfg.Propagator), metrics: metrics}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(ScopeName)
	}
	return s, nil
}

// producerKind is the span kind option, built once.
var producerKind = trace.WithSpanKind(trace.SpanKindProducer)

// start begins the send span of a call to queueURL, or returns ctx and a nil span
// without a tracer.
func (s *Sender) start(ctx context.Context, queueURL string, attributes ...attribute.KeyValue) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	queue := QueueName(queueURL)
	attributes = append(attributes, keySystem.String(systemSQS), attribute.String("messaging.operation.type", "send"),
		keyOperation.String("send"), KeyQueue.String(queue))
	return s.tracer.Start(ctx, "send "+queue, producerKind, trace.WithAttributes(attributes...))
}

// end ends span (when there is one) with err's status.
func end(span trace.Span, err error, attributes ...attribute.KeyValue) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		attributes = append(attributes, keyErrorType.String(errorType(err)))
	}
	span.SetAttributes(attributes...)
	span.End()
}

// SendMessage sends one message in a producer span, its context injected.
func (s *Sender) SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	ctx, span := s.start(ctx, aws.ToString(input.QueueUrl))
	if span != nil {
		copied := *input
		copied.MessageAttributes, copied.MessageSystemAttributes = s.carriers.inject(ctx, input.MessageAttributes, input.MessageSystemAttributes)
		input = &copied
	}
	started := time.Now()
	output, err := s.api.SendMessage(ctx, input, optFns...)
	s.metrics.recordSend(ctx, aws.ToString(input.QueueUrl), started, err)
	var id []attribute.KeyValue
	if err == nil {
		id = append(id, attribute.String("messaging.message.id", aws.ToString(output.MessageId)))
	}
	end(span, err, id...)
	return output, err
}

// SendMessageBatch sends a batch in one producer span, its context injected into every
// entry. Entries SQS refused count as an error of the span (error.type
// "BatchEntryFailed") without changing the call's result.
func (s *Sender) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	ctx, span := s.start(ctx, aws.ToString(input.QueueUrl), attribute.Int("messaging.batch.message_count", len(input.Entries)))
	if span != nil {
		copied := *input
		copied.Entries = make([]sqstypes.SendMessageBatchRequestEntry, len(input.Entries))
		for i, entry := range input.Entries {
			entry.MessageAttributes, entry.MessageSystemAttributes = s.carriers.inject(ctx, entry.MessageAttributes, entry.MessageSystemAttributes)
			copied.Entries[i] = entry
		}
		input = &copied
	}
	started := time.Now()
	output, err := s.api.SendMessageBatch(ctx, input, optFns...)
	s.metrics.recordBatch(ctx, input, output, started, err)
	if err == nil && len(output.Failed) > 0 {
		end(span, errBatchEntryFailed)
	} else {
		end(span, err)
	}
	return output, err
}

// GetQueueAttributes passes the call through.
func (s *Sender) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return s.api.GetQueueAttributes(ctx, input, optFns...)
}
