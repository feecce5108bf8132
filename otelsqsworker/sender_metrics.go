package otelsqsworker

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
)

// senderMetrics are a [Sender]'s instruments: OpenTelemetry's messaging client metrics
// for sends, and the sizes of its batches.
type senderMetrics struct {
	sent      metric.Int64Counter
	duration  metric.Float64Histogram
	batchSize metric.Int64Histogram
	sets      instrument.Cache[sendKey, *sendSets]
}

type sendKey struct{ queue, errorType string }

// sendSets holds the options of one queue and error type, built once.
type sendSets struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newSenderMetrics(provider metric.MeterProvider) (*senderMetrics, error) {
	build := instrument.New(provider, ScopeName)
	m := &senderMetrics{
		sent:      build.Counter(metricSent, instrument.Message, "Number of messages producer attempted to send to the broker."),
		duration:  build.Histogram(metricOperationDuration, instrument.Seconds, "Duration of messaging operation initiated by a producer or consumer client.", conventionBuckets),
		batchSize: build.IntHistogram("sqsworker.producer.batch.size", instrument.Message, "Entries of one SendMessageBatch call.", batchBuckets),
	}
	return m, build.Err()
}

// batchBuckets bound batch sizes: SQS takes 1 to 10 entries.
var batchBuckets = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

func (m *senderMetrics) setsOf(queueURL, errorType string) *sendSets {
	return m.sets.Get(sendKey{queueLabel(QueueName(queueURL)), errorType}, func(key sendKey) *sendSets {
		attributes := []attribute.KeyValue{keySystem.String(systemSQS), keyOperation.String("send"), KeyQueue.String(key.queue)}
		if key.errorType != "" {
			attributes = append(attributes, keyErrorType.String(key.errorType))
		}
		option := metric.WithAttributeSet(attribute.NewSet(attributes...))
		return &sendSets{add: []metric.AddOption{option}, record: []metric.RecordOption{option}}
	})
}

// recordSend records one SendMessage call.
func (m *senderMetrics) recordSend(ctx context.Context, queueURL string, started time.Time, err error) {
	kind := ""
	if err != nil {
		kind = errorType(err)
	}
	sets := m.setsOf(queueURL, kind)
	m.duration.Record(ctx, time.Since(started).Seconds(), sets.record...)
	m.sent.Add(ctx, 1, sets.add...)
}

// recordBatch records one SendMessageBatch call: each entry SQS refused counts as a sent
// message with error.type its error code, the others without (all with the call's
// error.type when the whole call failed).
func (m *senderMetrics) recordBatch(ctx context.Context, input *sqs.SendMessageBatchInput, output *sqs.SendMessageBatchOutput, started time.Time, err error) {
	queueURL := aws.ToString(input.QueueUrl)
	m.batchSize.Record(ctx, int64(len(input.Entries)), m.setsOf(queueURL, "").record...)
	if err != nil {
		sets := m.setsOf(queueURL, errorType(err))
		m.duration.Record(ctx, time.Since(started).Seconds(), sets.record...)
		m.sent.Add(ctx, int64(len(input.Entries)), sets.add...)
		return
	}
	kind := ""
	if len(output.Failed) > 0 {
		kind = "BatchEntryFailed"
	}
	m.duration.Record(ctx, time.Since(started).Seconds(), m.setsOf(queueURL, kind).record...)
	m.sent.Add(ctx, int64(len(input.Entries)-len(output.Failed)), m.setsOf(queueURL, "").add...)
	for _, failed := range output.Failed {
		m.sent.Add(ctx, 1, m.setsOf(queueURL, entryErrorType(aws.ToString(failed.Code))).add...)
	}
}

// entryErrorType is a refused entry's error.type: its SQS error code, cut to
// MaxReasonLength bytes ("_OTHER" when empty).
func entryErrorType(code string) string {
	if code == "" {
		return "_OTHER"
	}
	return reasonLabel(code)
}
