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

// AttributeJobType is the message attribute the default job type is read from:
// [sqsworker.AttributeJobType], the one sqsworker's ServeMux routes on.
const AttributeJobType = sqsworker.AttributeJobType

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
// The counts by queue alone are kept in atomics and read when the metrics are
// collected; the histograms and sqsworker.messages.finished go through the SDK.
// Observe takes a read lock only (per queue, for the outcome sets) and allocates nothing once a queue, job type,
// outcome and reason combination has been seen (see BenchmarkMetrics).
type Metrics struct {
	jobType                     func(*sqsworker.Message) string
	finished                    metric.Int64Counter
	handlerDuration, receiveLag metric.Float64Histogram
	counts                      [countKinds]metric.Int64Observable
	oldest                      metric.Float64ObservableGauge
	queues                      sync.Map // queue name → *queueEntry
	setCount                    atomic.Int64
}

// The counts of one queue, kept in atomics and read at collection: a measurement through
// the SDK costs far more than an atomic add.
const (
	countReceived = iota
	countInFlight
	countHeartbeats
	countHeartbeatFailures
	countDeletes
	countDeleteFailures
	countDeadLetters
	countDeadLetterFailures
	countRescheduleFailures
	countReleased
	countAbandoned
	countKinds
)

// queueCounts names, units and describes every count; in flight is an up-down counter,
// the rest are counters.
var queueCounts = [countKinds]struct{ name, unit, description string }{
	countReceived:           {"sqsworker.messages.received", "{message}", "Messages received."},
	countInFlight:           {"sqsworker.messages.in_flight", "{message}", "Messages received and not yet settled."},
	countHeartbeats:         {"sqsworker.heartbeats", "{heartbeat}", "Visibility extensions of held messages."},
	countHeartbeatFailures:  {"sqsworker.heartbeat.failures", "{heartbeat}", "Heartbeats that failed for good."},
	countDeletes:            {"sqsworker.deletes", "{message}", "Messages deleted (or reported as successes on Lambda)."},
	countDeleteFailures:     {"sqsworker.delete.failures", "{message}", "Deletes that failed for good; the message is delivered again."},
	countDeadLetters:        {"sqsworker.dead_letter.sends", "{message}", "Messages sent to the dead-letter queue."},
	countDeadLetterFailures: {"sqsworker.dead_letter.send_failures", "{message}", "Dead-letter sends that failed or are disabled; the message is retried."},
	countRescheduleFailures: {"sqsworker.reschedule.failures", "{message}", "Visibility changes for a retry that failed."},
	countReleased:           {"sqsworker.messages.released", "{message}", "Messages made visible again without being handled to the end."},
	countAbandoned:          {"sqsworker.handlers.abandoned", "{handler}", "Handlers that did not return after their context ended."},
}

// queueEntry holds one queue's attribute sets, built once, and its largest receive lag
// since the previous collection.
type queueEntry struct {
	queue    string
	base     *measurement // the queue alone
	maxLag   atomic.Int64 // nanoseconds
	counts   [countKinds]atomic.Int64
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
		m.jobType = defaultJobType
	}
	var errs []error
	for kind, c := range queueCounts {
		var err error
		if kind == countInFlight {
			m.counts[kind], err = meter.Int64ObservableUpDownCounter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.description))
		} else {
			m.counts[kind], err = meter.Int64ObservableCounter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.description))
		}
		errs = append(errs, err)
	}
	finished, err := meter.Int64Counter("sqsworker.messages.finished", metric.WithUnit("{message}"), metric.WithDescription("Handler calls that returned, by outcome and reason."))
	m.finished = finished
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
	if _, err := meter.RegisterCallback(m.observeQueues, append([]metric.Observable{m.oldest}, observables(m.counts[:])...)...); err != nil {
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
	switch ev.Kind {
	case sqsworker.EventReceived:
		q.counts[countReceived].Add(1)
		q.counts[countInFlight].Add(1)
		if ev.ReceiveLag > 0 {
			m.receiveLag.Record(ctx, ev.ReceiveLag.Seconds(), q.base.record...)
			q.noteLag(ev.ReceiveLag)
		}
	case sqsworker.EventFinished:
		key := outcomeKey{jobType: m.jobType(ev.Message), outcome: ev.Outcome.Kind}
		m.handlerDuration.Record(ctx, ev.HandlerDuration.Seconds(), m.outcome(q, key).record...)
		key.reason = ev.Outcome.Reason
		m.finished.Add(ctx, 1, m.outcome(q, key).add...)
	case sqsworker.EventHeartbeatExtended:
		q.counts[countHeartbeats].Add(1)
	case sqsworker.EventHeartbeatFailed:
		q.counts[countHeartbeatFailures].Add(1)
	case sqsworker.EventDeleted:
		q.counts[countDeletes].Add(1)
		q.counts[countInFlight].Add(-1)
	case sqsworker.EventDeleteFailed:
		q.counts[countDeleteFailures].Add(1)
		q.counts[countInFlight].Add(-1)
	case sqsworker.EventDeadLettered:
		q.counts[countDeadLetters].Add(1)
	case sqsworker.EventDeadLetterFailed:
		q.counts[countDeadLetterFailures].Add(1)
	case sqsworker.EventRescheduled:
		q.counts[countInFlight].Add(-1)
	case sqsworker.EventRescheduleFailed:
		q.counts[countRescheduleFailures].Add(1)
		q.counts[countInFlight].Add(-1)
	case sqsworker.EventReleased:
		q.counts[countReleased].Add(1)
		q.counts[countInFlight].Add(-1)
	case sqsworker.EventAbandoned:
		q.counts[countAbandoned].Add(1)
	}
}

func observables(counts []metric.Int64Observable) []metric.Observable {
	out := make([]metric.Observable, len(counts))
	for i, c := range counts {
		out[i] = c
	}
	return out
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

// observeQueues reports every queue's messages in flight, and reports and resets its
// largest receive lag.
func (m *Metrics) observeQueues(_ context.Context, observer metric.Observer) error {
	m.queues.Range(func(_, value any) bool {
		q := value.(*queueEntry)
		option := metric.WithAttributeSet(q.base.set)
		for kind := range q.counts {
			observer.ObserveInt64(m.counts[kind], q.counts[kind].Load(), option)
		}
		observer.ObserveFloat64(m.oldest, time.Duration(q.maxLag.Swap(0)).Seconds(), option)
		return true
	})
	return nil
}

// QueueName returns the queue's name: the last path segment of its URL ("" for "").
func QueueName(queueURL string) string {
	return queueURL[strings.LastIndexByte(queueURL, '/')+1:]
}
