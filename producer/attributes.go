package producer

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// W3C Trace Context names (https://www.w3.org/TR/trace-context/), the attributes the
// default trace context carries on, and the SQS system attribute of an X-Ray trace
// header, which does not count toward the 10 message attributes
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html,
// MessageSystemAttributes).
const (
	attributeTraceparent = "traceparent"
	attributeTracestate  = "tracestate"
	// AttributeAWSTraceHeader is the message system attribute of an X-Ray trace header
	// ("Root=1-...;Parent=...;Sampled=1"). A Config.TraceContext result under this key is
	// sent as that system attribute, not as a message attribute.
	AttributeAWSTraceHeader = string(types.MessageSystemAttributeNameForSendsAWSTraceHeader)
)

// traceContext returns the trace attributes for a job sent in ctx.
func (p *Producer) traceContext(ctx context.Context) map[string]string {
	if p.config.TraceContext != nil {
		return p.config.TraceContext(ctx)
	}
	message, ok := sqsworker.MessageFromContext(ctx)
	if !ok {
		return nil
	}
	trace := map[string]string{}
	for _, name := range []string{attributeTraceparent, attributeTracestate} {
		if value, ok := message.StringAttribute(name); ok {
			trace[name] = value
		}
	}
	if header := message.Attributes[AttributeAWSTraceHeader]; header != "" {
		trace[AttributeAWSTraceHeader] = header
	}
	return trace
}

// addTraceContext adds trace to a message's attributes without ever passing SQS's limit:
// the AWSTraceHeader key goes to the system attributes (which the limit does not count);
// the others are added all together when they fit, and left out otherwise (tracing never
// fails a send; the context then travels in AWSTraceHeader if trace has one).
func addTraceContext(message *outMessage, attributes map[string]types.MessageAttributeValue, trace map[string]string) {
	added := 0
	for key, value := range trace {
		if _, present := attributes[key]; value != "" && key != AttributeAWSTraceHeader && !present {
			added++
		}
	}
	fits := len(attributes)+added <= sqsinfo.MaxMessageAttributes
	for key, value := range trace {
		switch {
		case value == "":
		case key == AttributeAWSTraceHeader:
			message.systemAttributes = map[string]types.MessageSystemAttributeValue{key: {DataType: aws.String("String"), StringValue: aws.String(value)}}
		case fits:
			attributes[key] = stringValue(value)
		}
	}
}

// ownAttributes are the message attributes sqsworker adds to a job's own.
var ownAttributes = []string{sqsworker.AttributeJobType, sqsworker.AttributeJobID, sqsworker.AttributeIdempotencyKey, sqsworker.AttributeDueAt, AttributeUniqueRelease, sqsworker.AttributeEncryption}

// checkAttributeCount returns a [*TooManyAttributesError] when attributes are more than
// SQS takes, counting the job's own apart from sqsworker's.
func checkAttributeCount(attributes map[string]types.MessageAttributeValue) error {
	if len(attributes) <= sqsinfo.MaxMessageAttributes {
		return nil
	}
	own := 0
	for _, name := range ownAttributes {
		if _, ok := attributes[name]; ok {
			own++
		}
	}
	return &TooManyAttributesError{User: len(attributes) - own, Own: own, Limit: sqsinfo.MaxMessageAttributes}
}

func stringValue(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

func dueAtValue(due time.Time) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(due.UnixMilli(), 10))}
}
