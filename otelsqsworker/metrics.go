package otelsqsworker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
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
// MeterProvider with every job type labelled "unregistered": pass the mux's Registered
// method to label the program's job types by name.
type MetricsConfig struct {
	// MeterProvider records the instruments; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Registered reports whether a job type is the program's own, typically the
	// Registered method of the sqsworker.ServeMux the host runs. A message's job type
	// is the sender's choice (any string in an attribute), and each label value is a
	// series kept for the life of the process, so only a type Registered accepts is
	// labelled by name (attribute sqsworker.job.type); any other non-empty type is
	// labelled [JobTypeUnregistered]. If nil, every non-empty type is. It must be safe
	// for concurrent use; a type it accepted once is not asked about again.
	Registered func(jobType string) bool
	// JobType returns a message's job type; if nil, the value of its "job-type" message
	// attribute, "" when it has none (a message without a type is labelled ""). Its
	// result is labelled only when Registered accepts it.
	JobType func(*sqsworker.Message) string
	// MessagingConventions adds OpenTelemetry's messaging metrics beside this package's
	// own: messaging.client.consumed.messages {message} (a received message, by queue,
	// messaging.operation.name receive) and messaging.process.duration (s) histogram (a
	// handler call, by queue, messaging.operation.name process, error.type the failure's
	// reason), with messaging.system aws_sqs. If false, they are added when
	// OTEL_SEMCONV_STABILITY_OPT_IN ([OptInEnv]) lists "messaging" or "messaging/dup",
	// as the convention's migration rules ask of instrumentations; this package's own
	// instruments stay either way (they are not an older version of the convention).
	MessagingConventions bool
}

// Metrics is a [sqsworker.Observer] that records OpenTelemetry metrics of every
// message's life on either host. Instruments (units as UCUM; Prometheus names in
// brackets, from the OpenTelemetry Prometheus exporter):
//
//   - sqsworker.messages.received {message} [sqsworker_messages_received_total]: by queue;
//   - sqsworker.messages.finished {message} [sqsworker_messages_finished_total]: handler
//     calls that returned, by queue, job type, outcome (delete, dead-letter, retry,
//     retry-after, defer) and reason (PermanentError's reason, HandlerError, Panic, ...,
//     cut to [MaxReasonLength] bytes; past 1000 attribute sets in all, a reason not seen
//     before is counted as "other");
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
// The counts (received to abandoned above) are one instrument per [sqsworker.Count]
// that has a metric of its own, named and described by [sqsworker.Count.Metric]: a count
// added to the root shows here without a change to this package.
//
// No label value is a message's unchecked: the job type is a registered one or
// [JobTypeUnregistered] (see MetricsConfig.Registered), the queue is its name when SQS
// would accept it and the first [MaxQueues] names have not been taken ([LabelOther]
// otherwise), a reason is cut to [MaxReasonLength] bytes. So the series stay bounded
// whatever senders put in their messages.
//
// Every count (sqsworker.messages.finished included) is kept in an atomic of its
// attribute set and read when the metrics are collected (observable instruments,
// cumulative; with a delta exporter a series that did not change reports 0); only the
// two histograms go through the SDK at each event. The attribute sets are built once
// per queue, job type, outcome and reason and found again through copy-on-write maps
// read with one atomic load (the first queue and outcome seen are compared first):
// Observe takes no lock and allocates nothing once a combination has been seen (see
// BenchmarkMetrics).
type Metrics struct {
	jobType                     func(*sqsworker.Message) string
	jobTypes                    *jobTypes
	handlerDuration, receiveLag metric.Float64Histogram
	finished                    metric.Int64Observable
	counts                      [countKinds]metric.Int64Observable
	oldest                      metric.Float64ObservableGauge
	conventions                 *conventions                           // nil unless opted in
	mu                          sync.Mutex                             // guards byName and the replacement of queues
	byName                      map[string]*queueEntry                 // one entry per queue name
	queues                      atomic.Pointer[map[string]*queueEntry] // by queue URL; replaced, never changed
	first                       atomic.Pointer[queueEntry]             // the first queue seen, found without hashing
	setCount                    atomic.Int64
}

// The counts of one queue, kept in atomics and read at collection (a measurement through
// the SDK costs far more than an atomic add), indexed by sqsworker.Count: an event adds
// its sqsworker.Event.Tally. Each count with a metric of its own (sqsworker.Count.Metric)
// has an observable instrument; failed and deferred are counted by
// sqsworker.messages.finished's outcome instead.
const countKinds = sqsworker.NumCounts

// queueEntry holds one queue's counts, its attribute sets, built once, and its largest
// receive lag since the previous collection.
type queueEntry struct {
	url    string
	queue  string
	base   *measurement // the queue alone
	maxLag atomic.Int64 // nanoseconds
	counts [countKinds]atomic.Int64
	// outcomes is the lock-free lookup of Observe; mu guards its replacement and the
	// maps the sets are built in.
	outcomes  atomic.Pointer[map[outcomeKey]*outcomeEntry]
	first     atomic.Pointer[outcomeEntry] // the first key cached, compared before the map
	mu        sync.Mutex
	durations map[outcomeKey]*measurement // reason ""
	finished  map[outcomeKey]*counted
	processes map[outcomeKey]*measurement // the messaging convention's, by the finished key
	consumed  attribute.Set               // the messaging convention's consumed messages
}

type outcomeKey struct {
	jobType, reason string
	outcome         sqsworker.OutcomeKind
}

// outcomeEntry is what an EventFinished of one key records to.
type outcomeEntry struct {
	key      outcomeKey
	duration *measurement // queue, job type, outcome
	finished *counted     // queue, job type, outcome, reason ("other" past the limit)
	process  *measurement // the messaging convention's, when opted in
}

// measurement holds the options of one attribute set, built once.
type measurement struct {
	set    attribute.Set
	record []metric.RecordOption
}

func newMeasurement(attrs ...attribute.KeyValue) *measurement {
	set := attribute.NewSet(attrs...)
	return &measurement{set: set, record: []metric.RecordOption{metric.WithAttributeSet(set)}}
}

// counted is a count of one attribute set, read at collection.
type counted struct {
	set   attribute.Set
	count atomic.Int64
}

// NewMetrics creates the instruments. It returns an error when the meter refuses one.
func NewMetrics(cfg MetricsConfig) (*Metrics, error) {
	build := instrument.New(cfg.MeterProvider, ScopeName)
	m := &Metrics{jobType: cfg.JobType, jobTypes: newJobTypes(cfg.Registered)}
	if m.jobType == nil {
		m.jobType = defaultJobType
	}
	m.byName = map[string]*queueEntry{}
	m.queues.Store(&map[string]*queueEntry{})
	for count := range countKinds {
		if c := count.Metric(); c.Name != "" {
			m.counts[count] = build.ObservableCounter(c.Name, c.Unit, c.Description, c.UpDown)
		}
	}
	m.finished = build.ObservableCounter("sqsworker.messages.finished", instrument.Message, "Handler calls that returned, by outcome and reason.", false)
	m.handlerDuration = build.Histogram("sqsworker.handler.duration", instrument.Seconds, "Handler run time.", instrument.DurationBuckets)
	m.receiveLag = build.Histogram("sqsworker.receive.lag", instrument.Seconds, "Receive time minus the message's SentTimestamp.", instrument.LagBuckets)
	m.oldest = build.FloatObservableGauge("sqsworker.queue.oldest_message.age", instrument.Seconds,
		"Largest receive lag seen since the previous collection: an estimate of the age of the oldest message.")
	m.conventions = newConventions(cfg, build)
	if err := build.Err(); err != nil {
		return nil, err
	}
	observed := append([]metric.Observable{m.oldest, m.finished}, observables(m.counts[:])...)
	if m.conventions != nil {
		observed = append(observed, m.conventions.consumed)
	}
	if _, err := build.Meter().RegisterCallback(m.observeQueues, observed...); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe implements [sqsworker.Observer].
func (m *Metrics) Observe(ctx context.Context, ev sqsworker.Event) {
	if ev.Message == nil {
		return
	}
	q := m.queue(ev.Message.QueueURL)
	for kind, delta := range ev.Tally() {
		if delta != 0 {
			q.counts[kind].Add(delta)
		}
	}
	switch ev.Kind {
	case sqsworker.EventReceived:
		if ev.ReceiveLag > 0 {
			m.receiveLag.Record(ctx, ev.ReceiveLag.Seconds(), q.base.record...)
			q.noteLag(ev.ReceiveLag)
		}
	case sqsworker.EventFinished:
		key := outcomeKey{jobType: m.jobTypes.label(m.jobType(ev.Message)), outcome: ev.Outcome.Kind, reason: reasonLabel(ev.Outcome.Reason)}
		entry := m.outcome(q, key)
		m.handlerDuration.Record(ctx, ev.HandlerDuration.Seconds(), entry.duration.record...)
		if entry.process != nil {
			m.conventions.process.Record(ctx, ev.HandlerDuration.Seconds(), entry.process.record...)
		}
		entry.finished.count.Add(1)
	}
}

func observables(counts []metric.Int64Observable) []metric.Observable {
	out := make([]metric.Observable, 0, len(counts))
	for _, c := range counts {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// queue returns the entry of the queue URL, making it the first time. URLs of one name
// (another endpoint, account or region) share the name's entry: the attribute is the
// name (queueLabel), and past MaxQueues names new ones share the entry of LabelOther.
// Past maxQueueURLs URLs, a new URL is looked up under the lock each time, so the
// lock-free map stays bounded too.
func (m *Metrics) queue(queueURL string) *queueEntry {
	if first := m.first.Load(); first != nil && first.url == queueURL {
		return first
	}
	if entry, ok := (*m.queues.Load())[queueURL]; ok {
		return entry
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	queues := *m.queues.Load()
	if entry, ok := queues[queueURL]; ok {
		return entry
	}
	name := queueLabel(QueueName(queueURL))
	if _, known := m.byName[name]; !known && len(m.byName) >= MaxQueues {
		name = LabelOther
	}
	entry, ok := m.byName[name]
	if !ok {
		entry = &queueEntry{
			url:       queueURL,
			queue:     name,
			base:      newMeasurement(KeyQueue.String(name)),
			durations: map[outcomeKey]*measurement{},
			finished:  map[outcomeKey]*counted{},
			processes: map[outcomeKey]*measurement{},
			consumed:  consumedSet(name),
		}
		entry.outcomes.Store(&map[outcomeKey]*outcomeEntry{})
		m.byName[name] = entry
	}
	if len(queues) < maxQueueURLs {
		m.queues.Store(withEntry(queues, queueURL, entry))
	}
	m.first.CompareAndSwap(nil, entry)
	return entry
}

// outcome returns what an EventFinished of key records to, building its attribute sets
// the first time. Past maxAttributeSets sets in all, new reasons become "other" (and
// such keys are looked up under the lock each time, so the lookup map stays bounded).
func (m *Metrics) outcome(q *queueEntry, key outcomeKey) *outcomeEntry {
	if first := q.first.Load(); first != nil && first.key == key {
		return first
	}
	if cached, ok := (*q.outcomes.Load())[key]; ok {
		return cached
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	outcomes := *q.outcomes.Load()
	if cached, ok := outcomes[key]; ok {
		return cached
	}
	durationKey := outcomeKey{jobType: key.jobType, outcome: key.outcome}
	duration, ok := q.durations[durationKey]
	if !ok {
		duration = newMeasurement(KeyQueue.String(q.queue), KeyJobType.String(key.jobType), KeyOutcome.String(key.outcome.String()))
		q.durations[durationKey] = duration
		m.setCount.Add(1)
	}
	finishedKey := key
	if m.setCount.Load() >= maxAttributeSets && key.reason != "" {
		finishedKey.reason = "other"
	}
	finished, ok := q.finished[finishedKey]
	if !ok {
		attrs := []attribute.KeyValue{KeyQueue.String(q.queue), KeyJobType.String(key.jobType), KeyOutcome.String(key.outcome.String())}
		if finishedKey.reason != "" {
			attrs = append(attrs, KeyReason.String(finishedKey.reason))
		}
		finished = &counted{set: attribute.NewSet(attrs...)}
		q.finished[finishedKey] = finished
		m.setCount.Add(1)
	}
	entry := &outcomeEntry{key: key, duration: duration, finished: finished}
	if m.conventions != nil {
		entry.process = q.processes[finishedKey]
		if entry.process == nil {
			entry.process = processMeasurement(q.queue, finishedKey)
			q.processes[finishedKey] = entry.process
			m.setCount.Add(1)
		}
	}
	if finishedKey == key {
		q.outcomes.Store(withEntry(outcomes, key, entry))
		q.first.CompareAndSwap(nil, entry)
	}
	return entry
}

// withEntry returns a copy of entries with key set to value: the copy-on-write of the
// lookup maps, made once per queue or attribute set.
func withEntry[K comparable, V any](entries map[K]V, key K, value V) *map[K]V {
	copied := make(map[K]V, len(entries)+1)
	for k, v := range entries {
		copied[k] = v
	}
	copied[key] = value
	return &copied
}

func (q *queueEntry) noteLag(lag time.Duration) {
	for {
		current := q.maxLag.Load()
		if int64(lag) <= current || q.maxLag.CompareAndSwap(current, int64(lag)) {
			return
		}
	}
}

// observeQueues reports every queue's counts and finished messages, and reports and
// resets its largest receive lag.
func (m *Metrics) observeQueues(_ context.Context, observer metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.byName {
		option := metric.WithAttributeSet(q.base.set)
		for kind := range q.counts {
			if m.counts[kind] == nil {
				continue
			}
			observer.ObserveInt64(m.counts[kind], q.counts[kind].Load(), option)
		}
		observer.ObserveFloat64(m.oldest, time.Duration(q.maxLag.Swap(0)).Seconds(), option)
		if m.conventions != nil {
			observer.ObserveInt64(m.conventions.consumed, q.counts[sqsworker.CountReceived].Load(), metric.WithAttributeSet(q.consumed))
		}
		q.mu.Lock()
		for _, c := range q.finished {
			observer.ObserveInt64(m.finished, c.count.Load(), metric.WithAttributeSet(c.set))
		}
		q.mu.Unlock()
	}
	return nil
}

// QueueName returns the queue's name: the last path segment of its URL ("" for "").
func QueueName(queueURL string) string {
	return queueURL[strings.LastIndexByte(queueURL, '/')+1:]
}
