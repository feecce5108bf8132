package otelsqsworker_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// captureAPI records what a Sender passes on.
type captureAPI struct {
	// fail, if set, fails every call; refuse names batch entry ids SQS refuses, with
	// their code.
	fail   error
	refuse map[string]string

	mu      sync.Mutex
	sends   []*sqs.SendMessageInput
	batches []*sqs.SendMessageBatchInput
}

func (c *captureAPI) SendMessage(_ context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends = append(c.sends, input)
	if c.fail != nil {
		return nil, c.fail
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("m-" + strconv.Itoa(len(c.sends)))}, nil
}

func (c *captureAPI) SendMessageBatch(_ context.Context, input *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, input)
	if c.fail != nil {
		return nil, c.fail
	}
	output := &sqs.SendMessageBatchOutput{}
	for _, entry := range input.Entries {
		if code, ok := c.refuse[aws.ToString(entry.Id)]; ok {
			output.Failed = append(output.Failed, sqstypes.BatchResultErrorEntry{Id: entry.Id, Code: aws.String(code), SenderFault: true})
		} else {
			output.Successful = append(output.Successful, sqstypes.SendMessageBatchResultEntry{Id: entry.Id, MessageId: entry.Id})
		}
	}
	return output, nil
}

func (c *captureAPI) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{}, nil
}

func stringAttributes(n int) map[string]sqstypes.MessageAttributeValue {
	out := map[string]sqstypes.MessageAttributeValue{}
	for i := range n {
		out["a"+strconv.Itoa(i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("x")}
	}
	return out
}

// TestSenderInjectsWithinTheAttributeBudget: each send runs in a producer span "send
// <queue>", child of the caller's; its context goes in traceparent while it fits, in
// AWSTraceHeader (X-Ray format, same trace) when the 10 attributes are spent, never as an
// eleventh; a stale traceparent (carried on from a handled message) is overwritten; the
// caller's maps are left alone.
func TestSenderInjectsWithinTheAttributeBudget(t *testing.T) {
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	api := &captureAPI{}
	sender, err := otelsqsworker.NewSender(api, otelsqsworker.SenderConfig{TracerProvider: provider})
	require.NoError(t, err)
	ctx, request := provider.Tracer("test").Start(context.Background(), "request")
	stale := stringAttributes(9)
	stale["traceparent"] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(traceparent)}
	// tracestate is empty, so the W3C context is one attribute: it fits up to 9.
	inputs := []map[string]sqstypes.MessageAttributeValue{stringAttributes(0), stringAttributes(8), stringAttributes(9), stringAttributes(10), stale}
	for _, attributes := range inputs {
		_, err := sender.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("{}"), MessageAttributes: attributes})
		require.NoError(t, err)
	}
	_, err = sender.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("0"), MessageBody: aws.String("{}")}, {Id: aws.String("1"), MessageBody: aws.String("{}"), MessageAttributes: stringAttributes(10)},
	}})
	require.NoError(t, err)
	request.End()

	spans := recorder.Ended()
	require.Len(t, spans, 7) // five sends, one batch, the request
	traceID := request.SpanContext().TraceID().String()
	xrayRoot := "Root=1-" + traceID[:8] + "-" + traceID[8:] + ";Parent="
	for i, span := range spans[:6] {
		require.Equal(t, "send orders", span.Name())
		require.Equal(t, trace.SpanKindProducer, span.SpanKind())
		require.Equal(t, request.SpanContext().SpanID(), span.Parent().SpanID())
		require.Equal(t, "aws_sqs", spanAttribute(span, "messaging.system").AsString(), i)
	}
	require.Equal(t, "m-1", spanAttribute(spans[0], "messaging.message.id").AsString())
	require.Equal(t, int64(2), spanAttribute(spans[5], "messaging.batch.message_count").AsInt64())
	header := func(system map[string]sqstypes.MessageSystemAttributeValue) string {
		return aws.ToString(system[otelsqsworker.AttributeAWSTraceHeader].StringValue)
	}
	sent := api.sends
	wantParent := func(i int) string { return "00-" + traceID + "-" + spans[i].SpanContext().SpanID().String() + "-01" }
	for i, want := range []struct {
		traceparent bool
		header      bool
		count       int
	}{{true, false, 1}, {true, false, 9}, {true, false, 10}, {false, true, 10}, {true, false, 10}} {
		require.Len(t, sent[i].MessageAttributes, want.count, "send %d", i)
		if want.traceparent {
			require.Equal(t, wantParent(i), aws.ToString(sent[i].MessageAttributes["traceparent"].StringValue), "send %d", i)
		} else {
			require.NotContains(t, sent[i].MessageAttributes, "traceparent", "send %d", i)
		}
		if want.header {
			require.Equal(t, xrayRoot+spans[i].SpanContext().SpanID().String()+";Sampled=1", header(sent[i].MessageSystemAttributes), "send %d", i)
		} else {
			require.Empty(t, sent[i].MessageSystemAttributes, "send %d", i)
		}
	}
	require.Len(t, inputs[0], 0, "the caller's attributes are not changed")
	require.Equal(t, traceparent, aws.ToString(stale["traceparent"].StringValue))
	entries := api.batches[0].Entries
	require.Equal(t, wantParent(5), aws.ToString(entries[0].MessageAttributes["traceparent"].StringValue))
	require.Len(t, entries[1].MessageAttributes, 10)
	require.True(t, strings.HasPrefix(header(entries[1].MessageSystemAttributes), xrayRoot+spans[5].SpanContext().SpanID().String()))
}

// TestEmulatorSendAndProcessInOneTrace: through a Sender, package producer sends one job
// with room for the trace attributes and one whose attributes and sqsworker's take all
// 10; a poller with Tracing handles both (LocalStack returns AWSTraceHeader to the
// poller's receive). Each process span is its send span's child, in the caller's trace.
func TestEmulatorSendAndProcessInOneTrace(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	sender, err := otelsqsworker.NewSender(client, otelsqsworker.SenderConfig{TracerProvider: provider})
	require.NoError(t, err)
	jobs, err := producer.New(sender, producer.Config{})
	require.NoError(t, err)

	mux := sqsworker.NewServeMux()
	headers := make(chan string, 2)
	mux.RegisterFunc("email", func(ctx context.Context, m *sqsworker.Message) error {
		headers <- m.Attributes[otelsqsworker.AttributeAWSTraceHeader]
		return nil
	})
	traced := sqsworker.Chain(mux, otelsqsworker.Tracing(otelsqsworker.TracingConfig{TracerProvider: provider, Registered: mux.Registered}))
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second}, traced)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})

	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "email", Body: "{}"})
	require.NoError(t, err)
	full := map[string]sqstypes.MessageAttributeValue{}
	for i := range 10 - len(prepared.Attributes) {
		full["a"+strconv.Itoa(i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("x")}
	}
	ctx, request := provider.Tracer("test").Start(context.Background(), "request")
	roomy, err := jobs.Send(ctx, queue.URL, producer.Job{Type: "email", Body: "{}"})
	require.NoError(t, err)
	spent, err := jobs.Send(ctx, queue.URL, producer.Job{Type: "email", Body: "{}", Attributes: full})
	require.NoError(t, err)
	request.End()
	testenv.Eventually(t, 30*time.Second, "both messages deleted", func() bool { return server.Stats().Deleted == 2 })
	require.ElementsMatch(t, []bool{false, true}, []bool{<-headers != "", <-headers != ""}, "AWSTraceHeader on the spent message only")

	sends := map[string]sdktrace.ReadOnlySpan{}
	processes := map[string]sdktrace.ReadOnlySpan{}
	for _, span := range recorder.Ended() {
		id := spanAttribute(span, "messaging.message.id").AsString()
		switch span.Name() {
		case "send " + otelsqsworker.QueueName(queue.URL):
			sends[id] = span
		case "process " + otelsqsworker.QueueName(queue.URL):
			processes[id] = span
		}
	}
	for _, id := range []string{roomy, spent} {
		send, process := sends[id], processes[id]
		require.NotNil(t, send, id)
		require.NotNil(t, process, id)
		require.Equal(t, request.SpanContext().TraceID(), process.SpanContext().TraceID(), id)
		require.Equal(t, send.SpanContext().SpanID(), process.Parent().SpanID(), id)
		require.Equal(t, "email", spanAttribute(process, otelsqsworker.KeyJobType).AsString())
	}
}

// TestSenderMetrics: OpenTelemetry's messaging client metrics of a Sender, read with a
// manual reader: every message a call tried to send, by queue and error.type (none, the
// failed call's AWS error code, a refused entry's code), the duration of each call, and
// the batch sizes.
func TestSenderMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	api := &captureAPI{refuse: map[string]string{"2": "InvalidParameterValue"}}
	sender, err := otelsqsworker.NewSender(api, otelsqsworker.SenderConfig{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	ctx := context.Background()
	for range 2 {
		_, err := sender.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("{}")})
		require.NoError(t, err)
	}
	entries := []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0")}, {Id: aws.String("1")}, {Id: aws.String("2")}}
	_, err = sender.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	require.NoError(t, err)
	api.fail = &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "no queue"}
	_, err = sender.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("{}")})
	require.Error(t, err)
	_, err = sender.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries[:2]})
	require.Error(t, err)

	base := "messaging.destination.name=orders,messaging.operation.name=send,messaging.system=aws_sqs"
	missing := "error.type=AWS.SimpleQueueService.NonExistentQueue," + base
	require.Equal(t, map[string]int64{
		"messaging.client.sent.messages{" + base + "}":                                        4, // 2 alone, 2 of the first batch
		"messaging.client.sent.messages{error.type=InvalidParameterValue," + base + "}":       1,
		"messaging.client.sent.messages{" + missing + "}":                                     3, // 1 alone, 2 in the failed batch
		"messaging.client.operation.duration.count{" + base + "}":                             2,
		"messaging.client.operation.duration.count{error.type=BatchEntryFailed," + base + "}": 1,
		"messaging.client.operation.duration.count{" + missing + "}":                          2,
		"sqsworker.producer.batch.size.count{" + base + "}":                                   2,
		"sqsworker.producer.batch.size.sum{" + base + "}":                                     5,
	}, sums(t, reader))
}
