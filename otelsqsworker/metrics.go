package otelsqsworker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker"
)

// ScopeName is the instrumentation scope of the meter and tracer this package uses.
const ScopeName = "github.com/sqsworker/sqsworker/otelsqsworker"

// AttributeJobType is the message attribute the default job type is read from; it is the
// name sqsworker's ServeMux routes on.
const AttributeJobType = "job-type"

// Attribute keys of every measurement. Queue is the queue's name (the last segment of its
// URL), as OpenTelemetry's messaging conventions name it.
const (
	KeyQueue   = attribute.Key("messaging.destination.name")
	KeyJobType = attribute.Key("sqsworker.job.type")
	KeyOutcome = attribute.Key("sqsworker.outcome")
	KeyReason  = attribute.Key("sqsworker.reason")
)

// maxAttributeSets bounds the cached attribute sets: past it, new combinations are
// recorded with reason "other" (a reason is the PermanentError's or DeferError's, which
// programs choose; an unbounded one would grow every backend's series without limit).
const maxAttributeSets = 1000

// MetricsConfig configures [NewMetrics]. The zero value records to the global
// MeterProvider with the job type read from the "job-type" message attribute.
type MetricsConfig struct {
	// MeterProvider records the instruments; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// JobType returns a message's job type (attribute sqsworker.job.type); if nil, the
	// value of its "job-type" message attribute, "" when it has none.
	JobType func(*sqsworker.Message) string
}

// Metrics is a [sqsworker.Observer] that records OpenTelemetry metrics of every
// message's life on either host. Instruments (units as UCUM; Prometheus names in
// brackets, from the OpenTelemetry Prometheus exporter):
//
//   - sqsworker.messages.received {message} [sqsworker_messages_received_total]: by queue;
//   - sqsworker.messages.finished {message} [sqsworker_messages_finished_total]: handler
//     calls that returned, by queue, job type, outcome (delete, dead-letter, retry,
//     retry-after, defer) and reason (PermanentError's reason, HandlerError, Panic, ...);
//   - sqsworker.handler.duration (s) histogram, by queue, job type and outcome;
//   - sqsworker.receive.lag (s) histogram: receive time minus the message's
//     SentTimestamp (end-to-end latency), by queue;
//   - sqsworker.messages.in_flight {message} up-down counter: received, not yet settled;
//   - sqsworker.heartbeats and sqsworker.heartbeat.failures {heartbeat};
//   - sqsworker.deletes and sqsworker.delete.failures {message};
//   - sqsworker.dead_letter.sends and sqsworker.dead_letter.send_failures {message};
//   - sqsworker.reschedule.failures, sqsworker.messages.released {message};
//   - sqsworker.handlers.abandoned {handler};
//   - sqsworker.queue.oldest_message.age (s) gauge: the largest receive lag seen since
//     the previous collection, an estimate of SQS's ApproximateAgeOfOldestMessage (a
//     CloudWatch metric only); 0 when nothing was received.
//
// Observe takes no lock on the hot path and allocates nothing once a queue, job type,
// outcome and reason combination has been seen (see BenchmarkMetrics).
type Metrics struct {
	jobType                                 func(*sqsworker.Message) string
	received, finished                      metric.Int64Counter
	heartbeats, heartbeatFailures           metric.Int64Counter
	deletes, deleteFailures                 metric.Int64Counter
	deadLetters, deadLetterFailures         metric.Int64Counter
	rescheduleFailures, released, abandoned metric.Int64Counter
	inFlight                                metric.Int64UpDownCounter
	handlerDuration, receiveLag             metric.Float64Histogram
	oldest                                  metric.Float64ObservableGauge
	sets                                    sync.Map // setKey → *measurement
	setCount                                atomic.Int64
	queues                                  sync.Map // queue name → *queueAge
}

// queueEntry holds one queue's attribute sets, built once, and its largest receive lag
// since the previous collection.
type queueEntry struct {
	queue    string
	base     *measurement // the queue alone
	maxLag   atomic.Int64 // nanoseconds
	mu       sync.RWMutex
	outcomes map[outcomeKey]*measurement
}

type outcomeKey struct {
	jobType, reason string
	outcome         sqsworker.OutcomeKind
}

// measurement holds the options of one attribute set, built once.
type measurement struct {
	set    attribute.Set
	add    []metric.AddOption
	record []metric.RecordOption
}

func newMeasurement(attrs ...attribute.KeyValue) *measurement {
	set := attribute.NewSet(attrs...)
	return &measurement{set: set, add: []metric.AddOption{metric.WithAttributeSet(set)}, record: []metric.RecordOption{metric.WithAttributeSet(set)}}
}

// NewMetrics creates the instruments. It returns an error when the meter refuses one.
func NewMetrics(cfg MetricsConfig) (*Metrics, error) {
	provider := cfg.MeterProvider
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	meter := provider.Meter(ScopeName)
	m := &Metrics{jobType: cfg.JobType}
	if m.jobType == nil {
		m.jobType = func(message *sqsworker.Message) string {
			value, _ := message.StringAttribute(AttributeJobType)
			return value
		}
	}
	var errs []error
	counter := func(name, unit, description string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(description))
		errs = append(errs, err)
		return c
	}
	m.received = counter("sqsworker.messages.received", "{message}", "Messages received.")
	m.finished = counter("sqsworker.messages.finished", "{message}", "Handler calls that returned, by outcome and reason.")
	m.heartbeats = counter("sqsworker.heartbeats", "{heartbeat}", "Visibility extensions of held messages.")
	m.heartbeatFailures = counter("sqsworker.heartbeat.failures", "{heartbeat}", "Heartbeats that failed for good.")
	m.deletes = counter("sqsworker.deletes", "{message}", "Messages deleted (or reported as successes on Lambda).")
	m.deleteFailures = counter("sqsworker.delete.failures", "{message}", "Deletes that failed for good; the message is delivered again.")
	m.deadLetters = counter("sqsworker.dead_letter.sends", "{message}", "Messages sent to the dead-letter queue.")
	m.deadLetterFailures = counter("sqsworker.dead_letter.send_failures", "{message}", "Dead-letter sends that failed or are disabled; the message is retried.")
	m.rescheduleFailures = counter("sqsworker.reschedule.failures", "{message}", "Visibility changes for a retry that failed.")
	m.released = counter("sqsworker.messages.released", "{message}", "Messages made visible again without being handled to the end.")
	m.abandoned = counter("sqsworker.handlers.abandoned", "{handler}", "Handlers that did not return after their context ended.")
	var err error
	m.inFlight, err = meter.Int64UpDownCounter("sqsworker.messages.in_flight", metric.WithUnit("{message}"), metric.WithDescription("Messages received and not yet settled."))
	errs = append(errs, err)
	m.handlerDuration, err = meter.Float64Histogram("sqsworker.handler.duration", metric.WithUnit("s"), metric.WithDescription("Handler run time."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
	errs = append(errs, err)
	m.receiveLag, err = meter.Float64Histogram("sqsworker.receive.lag", metric.WithUnit("s"), metric.WithDescription("Receive time minus the message's SentTimestamp."),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400))
	errs = append(errs, err)
	m.oldest, err = meter.Float64ObservableGauge("sqsworker.queue.oldest_message.age", metric.WithUnit("s"),
		metric.WithDescription("Largest receive lag seen since the previous collection: an estimate of the age of the oldest message."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, err := meter.RegisterCallback(m.observeAges, m.oldest); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe implements [sqsworker.Observer].
func (m *Metrics) Observe(ctx context.Context, ev sqsworker.Event) {
	if ev.Message == nil {
		return
	}
	q := m.queue(QueueName(ev.Message.QueueURL))
	base := q.base
	switch ev.Kind {
	case sqsworker.EventReceived:
		m.received.Add(ctx, 1, base.add...)
		m.inFlight.Add(ctx, 1, base.add...)
		if ev.ReceiveLag > 0 {
			m.receiveLag.Record(ctx, ev.ReceiveLag.Seconds(), base.record...)
			q.noteLag(ev.ReceiveLag)
		}
	case sqsworker.EventFinished:
		key := outcomeKey{jobType: m.jobType(ev.Message), outcome: ev.Outcome.Kind}
		m.handlerDuration.Record(ctx, ev.HandlerDuration.Seconds(), m.outcome(q, key).record...)
		key.reason = ev.Outcome.Reason
		m.finished.Add(ctx, 1, m.outcome(q, key).add...)
	case sqsworker.EventHeartbeatExtended:
		m.heartbeats.Add(ctx, 1, base.add...)
	case sqsworker.EventHeartbeatFailed:
		m.heartbeatFailures.Add(ctx, 1, base.add...)
	case sqsworker.EventDeleted:
		m.deletes.Add(ctx, 1, base.add...)
		m.inFlight.Add(ctx, -1, base.add...)
	case sqsworker.EventDeleteFailed:
		m.deleteFailures.Add(ctx, 1, base.add...)
		m.inFlight.Add(ctx, -1, base.add...)
	case sqsworker.EventDeadLettered:
		m.deadLetters.Add(ctx, 1, base.add...)
	case sqsworker.EventDeadLetterFailed:
		m.deadLetterFailures.Add(ctx, 1, base.add...)
	case sqsworker.EventRescheduled:
		m.inFlight.Add(ctx, -1, base.add...)
	case sqsworker.EventRescheduleFailed:
		m.rescheduleFailures.Add(ctx, 1, base.add...)
		m.inFlight.Add(ctx, -1, base.add...)
	case sqsworker.EventReleased:
		m.released.Add(ctx, 1, base.add...)
		m.inFlight.Add(ctx, -1, base.add...)
	case sqsworker.EventAbandoned:
		m.abandoned.Add(ctx, 1, base.add...)
	}
}

// queue returns the entry of the queue, making it the first time.
func (m *Metrics) queue(name string) *queueEntry {
	if entry, ok := m.queues.Load(name); ok {
		return entry.(*queueEntry)
	}
	entry, _ := m.queues.LoadOrStore(name, &queueEntry{
		queue:    name,
		base:     newMeasurement(KeyQueue.String(name)),
		outcomes: map[outcomeKey]*measurement{},
	})
	return entry.(*queueEntry)
}

// outcome returns the cached options of the queue's attribute set for key, building
// them the first time. Past maxAttributeSets sets in all, new reasons become "other".
func (m *Metrics) outcome(q *queueEntry, key outcomeKey) *measurement {
	q.mu.RLock()
	cached, ok := q.outcomes[key]
	q.mu.RUnlock()
	if ok {
		return cached
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if m.setCount.Load() >= maxAttributeSets && key.reason != "" {
		key.reason = "other"
	}
	if cached, ok := q.outcomes[key]; ok {
		return cached
	}
	attrs := []attribute.KeyValue{KeyQueue.String(q.queue), KeyJobType.String(key.jobType), KeyOutcome.String(key.outcome.String())}
	if key.reason != "" {
		attrs = append(attrs, KeyReason.String(key.reason))
	}
	built := newMeasurement(attrs...)
	q.outcomes[key] = built
	m.setCount.Add(1)
	return built
}

func (q *queueEntry) noteLag(lag time.Duration) {
	for {
		current := q.maxLag.Load()
		if int64(lag) <= current || q.maxLag.CompareAndSwap(current, int64(lag)) {
			return
		}
	}
}

// observeAges reports and resets every queue's largest receive lag.
func (m *Metrics) observeAges(_ context.Context, observer metric.Observer) error {
	m.queues.Range(func(_, value any) bool {
		q := value.(*queueEntry)
		observer.ObserveFloat64(m.oldest, time.Duration(q.maxLag.Swap(0)).Seconds(), metric.WithAttributeSet(q.base.set))
		return true
	})
	return nil
}

// QueueName returns the queue's name: the last path segment of its URL ("" for "").
func QueueName(queueURL string) string {
	return queueURL[strings.LastIndexByte(queueURL, '/')+1:]
}
