package otelsqsworker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker"
)

const queueURL = "http://127.0.0.1:4566/000000000000/orders"

func newMessage(jobType string) *sqsworker.Message {
	m := &sqsworker.Message{ID: "m1", QueueURL: queueURL, ReceiveCount: 1}
	if jobType != "" {
		m.MessageAttributes = map[string]sqsworker.MessageAttribute{otelsqsworker.AttributeJobType: {DataType: "String", StringValue: jobType}}
	}
	return m
}

// life reports one message's events as the hosts do for a handler result.
func life(ctx context.Context, o sqsworker.Observer, m *sqsworker.Message, err error) {
	now := time.Now()
	o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: m, Time: now, ReceiveLag: 1500 * time.Millisecond})
	o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventStarted, Message: m, Time: now})
	outcome := sqsworker.Classify(err)
	o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Message: m, Time: now, Outcome: outcome, HandlerDuration: 20 * time.Millisecond})
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
		o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: m, Time: now})
	case sqsworker.OutcomeDeadLetter:
		o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeadLettered, Message: m, Time: now, Outcome: outcome})
		o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: m, Time: now})
	default:
		o.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventRescheduled, Message: m, Time: now, Outcome: outcome})
	}
}

// sums returns every Int64 sum data point as "name{attrs}" → value.
func sums(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var data metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &data))
	out := map[string]int64{}
	for _, scope := range data.ScopeMetrics {
		for _, m := range scope.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+".count{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = int64(p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+".count{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = int64(p.Count)
					out[m.Name+".sum{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Sum
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+".g{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Value
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+".ms{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = int64(p.Value * 1000)
				}
			}
		}
	}
	return out
}

func TestMetricsCountsByOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider, Registered: emailRegistered})
	require.NoError(t, err)
	ctx := context.Background()
	life(ctx, metrics, newMessage("email"), nil)
	life(ctx, metrics, newMessage("email"), nil)
	life(ctx, metrics, newMessage("email"), sqsworker.Permanent("BadAddress", errors.New("no such mailbox")))
	life(ctx, metrics, newMessage(""), errors.New("timeout"))

	got := sums(t, reader)
	q := "messaging.destination.name=orders"
	require.Equal(t, map[string]int64{
		"sqsworker.messages.received{" + q + "}":                                                   4,
		"sqsworker.messages.in_flight{" + q + "}":                                                  0,
		"sqsworker.deletes{" + q + "}":                                                             3,
		"sqsworker.dead_letter.sends{" + q + "}":                                                   1,
		"sqsworker.heartbeats{" + q + "}":                                                          0,
		"sqsworker.heartbeat.failures{" + q + "}":                                                  0,
		"sqsworker.delete.failures{" + q + "}":                                                     0,
		"sqsworker.dead_letter.send_failures{" + q + "}":                                           0,
		"sqsworker.reschedule.failures{" + q + "}":                                                 0,
		"sqsworker.messages.released{" + q + "}":                                                   0,
		"sqsworker.handlers.abandoned{" + q + "}":                                                  0,
		"sqsworker.messages.finished{" + q + ",sqsworker.job.type=email,sqsworker.outcome=delete}": 2,
		"sqsworker.messages.finished{" + q + ",sqsworker.job.type=email,sqsworker.outcome=dead-letter,sqsworker.reason=BadAddress}": 1,
		"sqsworker.messages.finished{" + q + ",sqsworker.job.type=,sqsworker.outcome=retry,sqsworker.reason=HandlerError}":          1,
		"sqsworker.handler.duration.count{" + q + ",sqsworker.job.type=email,sqsworker.outcome=delete}":                             2,
		"sqsworker.handler.duration.count{" + q + ",sqsworker.job.type=email,sqsworker.outcome=dead-letter}":                        1,
		"sqsworker.handler.duration.count{" + q + ",sqsworker.job.type=,sqsworker.outcome=retry}":                                   1,
		"sqsworker.receive.lag.count{" + q + "}":           4,
		"sqsworker.queue.oldest_message.age.ms{" + q + "}": 1500,
	}, got)
	// The age estimate is the largest lag since the previous collection.
	require.Equal(t, int64(0), sums(t, reader)["sqsworker.queue.oldest_message.age.ms{"+q+"}"])
}

// TestMetricsSeveralQueuesAndBoundedReasons: messages of two queues interleaved are
// counted each under its own queue, and a third URL of one of the names under that name; reasons past the 1000 attribute sets are counted
// under "other", while reasons seen before the limit keep their own series.
func TestMetricsSeveralQueuesAndBoundedReasons(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Registered: emailRegistered})
	require.NoError(t, err)
	ctx := context.Background()
	other := newMessage("email")
	other.QueueURL = "http://127.0.0.1:4566/000000000000/invoices"
	for range 3 {
		life(ctx, metrics, newMessage("email"), nil)
		life(ctx, metrics, other, nil)
	}
	// Another URL of the name "orders" counts as "orders".
	sameName := newMessage("email")
	sameName.QueueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
	life(ctx, metrics, sameName, nil)
	// 4 sets so far (duration and finished of each queue), 1 more for the dead-letter
	// duration: reasons 0 to 994 get sets of their own, 995 to 999 are "other".
	for i := range 1000 {
		life(ctx, metrics, newMessage("email"), sqsworker.Permanent(fmt.Sprintf("reason-%d", i), errors.New("bad")))
	}
	life(ctx, metrics, newMessage("email"), sqsworker.Permanent("reason-0", errors.New("bad")))
	life(ctx, metrics, newMessage("email"), sqsworker.Permanent("reason-999", errors.New("bad")))

	got := sums(t, reader)
	orders, invoices := "messaging.destination.name=orders", "messaging.destination.name=invoices"
	finished := func(queue, rest string) string {
		return "sqsworker.messages.finished{" + queue + ",sqsworker.job.type=email,sqsworker.outcome=" + rest + "}"
	}
	require.Equal(t, int64(4), got[finished(orders, "delete")])
	require.Equal(t, int64(3), got[finished(invoices, "delete")])
	require.Equal(t, int64(4+1002), got["sqsworker.messages.received{"+orders+"}"])
	require.Equal(t, int64(0), got["sqsworker.messages.in_flight{"+orders+"}"])
	require.Equal(t, int64(3), got["sqsworker.messages.received{"+invoices+"}"])
	require.Equal(t, int64(2), got[finished(orders, "dead-letter,sqsworker.reason=reason-0")])
	require.Equal(t, int64(1), got[finished(orders, "dead-letter,sqsworker.reason=reason-994")])
	require.NotContains(t, got, finished(orders, "dead-letter,sqsworker.reason=reason-995"))
	require.Equal(t, int64(6), got[finished(orders, "dead-letter,sqsworker.reason=other")])
	require.Equal(t, int64(1002), got["sqsworker.handler.duration.count{"+orders+",sqsworker.job.type=email,sqsworker.outcome=dead-letter}"])
	var series, deadLettered int64
	for name, value := range got {
		if strings.HasPrefix(name, "sqsworker.messages.finished{"+orders+",sqsworker.job.type=email,sqsworker.outcome=dead-letter,") {
			series++
			deadLettered += value
		}
	}
	require.Equal(t, int64(996), series) // 995 reasons and "other"
	require.Equal(t, int64(1002), deadLettered)
}

// TestMetricsConcurrentObserveAndCollect: goroutines observing messages of new queues
// and outcomes while the reader collects lose no count (run with -race).
func TestMetricsConcurrentObserveAndCollect(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Registered: emailRegistered})
	require.NoError(t, err)
	ctx := context.Background()
	done := make(chan struct{})
	var workers sync.WaitGroup
	for g := range 4 {
		workers.Go(func() {
			m := newMessage("email")
			m.QueueURL = fmt.Sprintf("http://127.0.0.1:4566/000000000000/q%d", g%2)
			for i := range 200 {
				life(ctx, metrics, m, sqsworker.Permanent(fmt.Sprintf("r%d", i%7), errors.New("bad")))
			}
		})
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case <-done:
				return
			default:
				var data metricdata.ResourceMetrics
				_ = reader.Collect(ctx, &data)
			}
		}
	}()
	workers.Wait()
	close(done)
	<-collected
	got := sums(t, reader)
	for q := range 2 {
		queue := fmt.Sprintf("messaging.destination.name=q%d", q)
		require.Equal(t, int64(400), got["sqsworker.messages.received{"+queue+"}"])
		require.Equal(t, int64(0), got["sqsworker.messages.in_flight{"+queue+"}"])
		for r := range 7 {
			want := int64(2 * (200 / 7))
			if r < 200%7 {
				want += 2
			}
			require.Equal(t, want, got[fmt.Sprintf("sqsworker.messages.finished{%s,sqsworker.job.type=email,sqsworker.outcome=dead-letter,sqsworker.reason=r%d}", queue, r)])
		}
	}
}

// emailRegistered is the Registered of a mux whose one job type is "email".
func emailRegistered(jobType string) bool { return jobType == "email" }

// TestMetricsMessagingConventions: with MessagingConventions (or OTEL_SEMCONV_STABILITY_OPT_IN
// listing messaging/dup), OpenTelemetry's messaging metrics are recorded beside the
// project's: consumed messages by queue, and the processing duration by queue and
// error.type (the failure's reason); without either, none.
func TestMetricsMessagingConventions(t *testing.T) {
	run := func(cfg otelsqsworker.MetricsConfig) map[string]int64 {
		reader := sdkmetric.NewManualReader()
		cfg.MeterProvider, cfg.Registered = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), emailRegistered
		metrics, err := otelsqsworker.NewMetrics(cfg)
		require.NoError(t, err)
		ctx := context.Background()
		life(ctx, metrics, newMessage("email"), nil)
		life(ctx, metrics, newMessage("email"), nil)
		life(ctx, metrics, newMessage("email"), sqsworker.Permanent("BadAddress", errors.New("no such mailbox")))
		life(ctx, metrics, newMessage(""), errors.New("timeout"))
		life(ctx, metrics, newMessage("email"), sqsworker.Defer(time.Minute, "Busy"))
		conventions := map[string]int64{}
		for name, value := range sums(t, reader) {
			if strings.HasPrefix(name, "messaging.") {
				conventions[name] = value
			}
		}
		return conventions
	}
	system := "messaging.system=aws_sqs"
	process := "messaging.destination.name=orders,messaging.operation.name=process," + system
	want := map[string]int64{
		"messaging.client.consumed.messages{messaging.destination.name=orders,messaging.operation.name=receive," + system + "}": 5,
		"messaging.process.duration.count{" + process + "}":                                                                     3, // 2 deletes, 1 deferral
		"messaging.process.duration.count{error.type=BadAddress," + process + "}":                                               1,
		"messaging.process.duration.count{error.type=HandlerError," + process + "}":                                             1,
	}
	t.Setenv(otelsqsworker.OptInEnv, "")
	require.Empty(t, run(otelsqsworker.MetricsConfig{}), "not opted in")
	require.Equal(t, want, run(otelsqsworker.MetricsConfig{MessagingConventions: true}))
	t.Setenv(otelsqsworker.OptInEnv, "http, messaging/dup")
	require.Equal(t, want, run(otelsqsworker.MetricsConfig{}))
}
