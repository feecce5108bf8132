package oteloutbox

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
	"github.com/sqsworker/sqsworker/outbox"
)

// ScopeName is the instrumentation scope of the meter this package uses.
const ScopeName = "github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox"

// KeyStore is the attribute naming an outbox's store: "postgres", "dynamodb" or
// "dynamodb-stream" (outbox.Event.Store). Queue and job type use otelsqsworker's keys
// (messaging.destination.name, sqsworker.job.type).
const KeyStore = attribute.Key("sqsworker.outbox.store")

// KeyFailure is the attribute naming why an entry failed: "refused" (SQS or the
// producer refused it: outbox.ErrRefused), "damaged" (outbox.ErrDamaged) or "attempts"
// (outbox.ErrAttemptsExhausted); "other" for anything else.
const KeyFailure = attribute.Key("sqsworker.outbox.failure")

// Config configures [NewMetrics].
type Config struct {
	// MeterProvider records the instruments; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Metrics is an [outbox.Observer] that records OpenTelemetry metrics of outbox relays
// (PostgreSQL and DynamoDB relays, and the DynamoDB Streams handler); pass it as
// outbox.RelayConfig.Observer or to dynamostream.New. Instruments (units as
// UCUM; Prometheus names, from the OpenTelemetry Prometheus exporter, in brackets):
//
//   - sqsworker.outbox.entries.published {entry} [sqsworker_outbox_entries_published_total]:
//     entries SQS confirmed, by store, queue and job type (the entry's Type);
//   - sqsworker.outbox.entries.failed {entry} [sqsworker_outbox_entries_failed_total]:
//     entries marked failed (outbox.EventFailed; not sent again unless retried), by
//     store, queue, job type and failure (KeyFailure);
//   - sqsworker.outbox.entries.retried {entry} [sqsworker_outbox_entries_retried_total]:
//     times an entry was left for a later cycle (outbox.EventRetry: its send failed, or
//     an earlier entry of its FIFO group was not sent), by store, queue and job type;
//   - sqsworker.outbox.store.errors {error} [sqsworker_outbox_store_errors_total]:
//     failed store calls, by store;
//   - sqsworker.outbox.lag (s) histogram [sqsworker_outbox_lag_seconds]: publish time
//     minus the entry's CreatedAt, by store, queue and job type. CreatedAt is the
//     writer's clock, so clock skew shows; a negative lag counts as 0;
//   - gauges, by store, as a relay last reported them (outbox.EventBacklog, every
//     RelayConfig.ReportInterval, 10 s by default): sqsworker.outbox.backlog {entry}
//     [sqsworker_outbox_backlog], the unpublished entries;
//     sqsworker.outbox.oldest_unpublished.age (s)
//     [sqsworker_outbox_oldest_unpublished_age_seconds], the age of the oldest one (0
//     when none: alarm on it, it grows when the relays are down or a group is parked);
//     sqsworker.outbox.failed {entry} [sqsworker_outbox_failed], the failed entries;
//     sqsworker.outbox.groups.parked {group} [sqsworker_outbox_groups_parked], the
//     parked FIFO message groups. Relays of two outboxes of one store kind in one
//     process overwrite each other's gauges: give each its own provider.
//
// Queues and job types come from the program's own entries, so their attribute sets
// are not bounded here. The relays report at most a few thousand entries a second, so
// every measurement goes through the SDK, with attribute sets built once per store,
// queue and job type. ObserveOutbox is safe for concurrent use.
type Metrics struct {
	published, failed, retried, storeErrors metric.Int64Counter
	lag                                     metric.Float64Histogram
	backlog, failedNow, parked              metric.Int64Gauge
	oldest                                  metric.Float64Gauge
	sets                                    instrument.Cache[setKey, *sets]
}

type setKey struct{ store, queueURL, jobType, failure string }

// sets holds the options of one key's attribute sets, built once.
type sets struct {
	entry []metric.AddOption    // store, queue, job type
	lag   []metric.RecordOption // the same set
	store []metric.AddOption    // store alone
	gauge []metric.RecordOption // store alone
}

// NewMetrics creates the instruments. It returns an error when the meter refuses one.
func NewMetrics(cfg Config) (*Metrics, error) {
	build := instrument.New(cfg.MeterProvider, ScopeName)
	m := &Metrics{
		published:   build.Counter("sqsworker.outbox.entries.published", "{entry}", "Outbox entries SQS confirmed."),
		failed:      build.Counter("sqsworker.outbox.entries.failed", "{entry}", "Outbox entries marked failed: refused, damaged or out of attempts."),
		retried:     build.Counter("sqsworker.outbox.entries.retried", "{entry}", "Times an outbox entry was left unpublished for a later cycle."),
		storeErrors: build.Counter("sqsworker.outbox.store.errors", "{error}", "Failed outbox store calls."),
		lag:         build.Histogram("sqsworker.outbox.lag", instrument.Seconds, "Publish time minus the outbox entry's creation time.", instrument.DelayBuckets),
		backlog:     build.Gauge("sqsworker.outbox.backlog", "{entry}", "Unpublished outbox entries, as a relay last reported them."),
		oldest:      build.FloatGauge("sqsworker.outbox.oldest_unpublished.age", instrument.Seconds, "Age of the oldest unpublished outbox entry, as a relay last reported it."),
		failedNow:   build.Gauge("sqsworker.outbox.failed", "{entry}", "Failed outbox entries, as a relay last reported them."),
		parked:      build.Gauge("sqsworker.outbox.groups.parked", "{group}", "FIFO message groups held back by a failed outbox entry, as a relay last reported them."),
	}
	if err := build.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ObserveOutbox implements [outbox.Observer].
func (m *Metrics) ObserveOutbox(ctx context.Context, ev outbox.Event) {
	key := setKey{store: ev.Store}
	if ev.Entry != nil {
		key.queueURL, key.jobType = ev.Entry.QueueURL, ev.Entry.Type
	}
	if ev.Kind == outbox.EventFailed {
		key.failure = failure(ev.Err)
	}
	s := m.setsOf(key)
	switch ev.Kind {
	case outbox.EventPublished:
		m.published.Add(ctx, 1, s.entry...)
		if ev.Entry != nil && !ev.Entry.CreatedAt.IsZero() {
			m.lag.Record(ctx, max(ev.Time.Sub(ev.Entry.CreatedAt), 0).Seconds(), s.lag...)
		}
	case outbox.EventFailed:
		m.failed.Add(ctx, 1, s.entry...)
	case outbox.EventRetry:
		m.retried.Add(ctx, 1, s.entry...)
	case outbox.EventStoreError:
		m.storeErrors.Add(ctx, 1, s.store...)
	case outbox.EventBacklog:
		m.backlog.Record(ctx, int64(ev.Backlog), s.gauge...)
		m.oldest.Record(ctx, ev.Lag.Seconds(), s.gauge...)
		m.failedNow.Record(ctx, int64(ev.Failed), s.gauge...)
		m.parked.Record(ctx, int64(ev.Parked), s.gauge...)
	}
}

// failure names the cause of an entry's failure (KeyFailure).
func failure(err error) string {
	switch {
	case errors.Is(err, outbox.ErrRefused):
		return "refused"
	case errors.Is(err, outbox.ErrDamaged):
		return "damaged"
	case errors.Is(err, outbox.ErrAttemptsExhausted):
		return "attempts"
	}
	return "other"
}

// setsOf returns the key's options, building them the first time.
func (m *Metrics) setsOf(key setKey) *sets { return m.sets.Get(key, newSets) }

func newSets(key setKey) *sets {
	attributes := []attribute.KeyValue{KeyStore.String(key.store),
		otelsqsworker.KeyQueue.String(otelsqsworker.QueueName(key.queueURL)), otelsqsworker.KeyJobType.String(key.jobType)}
	if key.failure != "" {
		attributes = append(attributes, KeyFailure.String(key.failure))
	}
	entry := metric.WithAttributeSet(attribute.NewSet(attributes...))
	store := metric.WithAttributeSet(attribute.NewSet(KeyStore.String(key.store)))
	return &sets{
		entry: []metric.AddOption{entry}, lag: []metric.RecordOption{entry},
		store: []metric.AddOption{store}, gauge: []metric.RecordOption{store},
	}
}
