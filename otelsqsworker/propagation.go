package otelsqsworker

import (
	"context"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// AttributeAWSTraceHeader is the SQS system attribute that carries an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"). A
// sender sets it (MessageSystemAttributes of SendMessage), SQS returns it to receivers
// that ask for it (MessageSystemAttributeNames All or AWSTraceHeader; a Lambda event
// source mapping always does), and it does not count toward the 10 message attributes
// (https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sqs.html).
const AttributeAWSTraceHeader = string(sqstypes.MessageSystemAttributeNameAWSTraceHeader)

// xrayHeader is the carrier key the X-Ray propagator reads and writes.
const xrayHeader = "X-Amzn-Trace-Id"

// carriers reads and writes a message's trace context: the attribute propagator's
// fields (W3C traceparent and tracestate by default) as String message attributes, and
// the X-Ray trace header in the AWSTraceHeader system attribute, through the
// OpenTelemetry contrib X-Ray propagator.
type carriers struct {
	attributes propagation.TextMapPropagator
	xray       xray.Propagator
}

func newCarriers(attributes propagation.TextMapPropagator) carriers {
	if attributes == nil {
		attributes = propagation.TraceContext{}
	}
	return carriers{attributes: attributes}
}

// sent is what a message says of its producer's span.
type sent struct {
	// ctx is the handler's context with what the attribute propagator extracted (its
	// baggage, say).
	ctx context.Context
	// parent is the producer's span: from the message attributes, else from
	// AWSTraceHeader; invalid when neither holds one.
	parent trace.SpanContext
	// link is the AWSTraceHeader's span when both hold one, of another trace.
	link trace.SpanContext
	// malformedAttributes and malformedHeader report a context present but unreadable.
	malformedAttributes, malformedHeader bool
}

// extract reads the producer's span context of m.
func (c carriers) extract(ctx context.Context, m *sqsworker.Message) sent {
	out := sent{ctx: c.attributes.Extract(ctx, attributeCarrier{m})}
	fromAttributes := trace.SpanContextFromContext(out.ctx)
	if !fromAttributes.IsRemote() || fromAttributes.Equal(trace.SpanContextFromContext(ctx)) {
		fromAttributes = trace.SpanContext{}
		for _, field := range c.attributes.Fields() {
			if value, _ := m.StringAttribute(field); value != "" {
				out.malformedAttributes = true
			}
		}
	}
	var fromHeader trace.SpanContext
	if header := m.Attributes[AttributeAWSTraceHeader]; header != "" {
		fromHeader = trace.SpanContextFromContext(c.xray.Extract(context.Background(), propagation.MapCarrier{xrayHeader: header}))
		out.malformedHeader = !fromHeader.IsValid()
	}
	switch {
	case fromAttributes.IsValid():
		out.parent = fromAttributes
		if fromHeader.IsValid() && fromHeader.TraceID() != fromAttributes.TraceID() {
			out.link = fromHeader
		}
	case fromHeader.IsValid():
		out.parent = fromHeader
	}
	return out
}

// inject writes the span context of ctx into a message about to be sent, never adding
// an attribute past SQS's 10: the attribute propagator's fields when they all fit;
// otherwise the fields the message already has are overwritten (a context carried on
// from the message being handled) and the context travels in AWSTraceHeader. The maps
// given are not changed; the ones returned may be new.
func (c carriers) inject(ctx context.Context, attributes map[string]sqstypes.MessageAttributeValue, system map[string]sqstypes.MessageSystemAttributeValue) (map[string]sqstypes.MessageAttributeValue, map[string]sqstypes.MessageSystemAttributeValue) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return attributes, system
	}
	carrier := propagation.MapCarrier{}
	c.attributes.Inject(ctx, carrier)
	added := 0
	for key := range carrier {
		if _, present := attributes[key]; !present {
			added++
		}
	}
	fits := len(attributes)+added <= sqsinfo.MaxMessageAttributes
	out := make(map[string]sqstypes.MessageAttributeValue, len(attributes)+added)
	maps.Copy(out, attributes)
	for key, value := range carrier {
		if _, present := attributes[key]; fits || present {
			out[key] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
		}
	}
	if fits {
		return out, system
	}
	header := propagation.MapCarrier{}
	c.xray.Inject(ctx, header)
	systemOut := make(map[string]sqstypes.MessageSystemAttributeValue, len(system)+1)
	maps.Copy(systemOut, system)
	systemOut[AttributeAWSTraceHeader] = sqstypes.MessageSystemAttributeValue{DataType: aws.String("String"), StringValue: aws.String(header[xrayHeader])}
	return out, systemOut
}

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
