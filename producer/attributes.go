package producer

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// W3C Trace Context names (https://www.w3.org/TR/trace-context/), the attributes the
// default trace context carries on.
const (
	attributeTraceparent = "traceparent"
	attributeTracestate  = "tracestate"
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
	return trace
}

func stringValue(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

func dueAtValue(due time.Time) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(due.UnixMilli(), 10))}
}
