package otelscheduler

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
	"github.com/sqsworker/sqsworker/scheduler"
)

// ScopeName is the instrumentation scope of the meter this package uses.
const ScopeName = "github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler"

// Attribute keys: the schedule's name and what became of a tick. A lost leadership's
// reason uses otelsqsworker.KeyReason (sqsworker.reason).
const (
	KeySchedule    = attribute.Key("sqsworker.schedule")
	KeyTickOutcome = attribute.Key("sqsworker.tick.outcome")
)

// The values of KeyTickOutcome.
const (
	TickEnqueued = "enqueued"
	TickResent   = "resent"
	TickSkipped  = "skipped"
	TickFailed   = "failed"
)

// Config configures [NewMetrics].
type Config struct {
	// MeterProvider records the instruments; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Metrics is a [scheduler.Observer] that records OpenTelemetry metrics of a scheduler
// replica; pass it as scheduler.Config.Observer. Instruments (units as UCUM; Prometheus
// names, from the OpenTelemetry Prometheus exporter, in brackets):
//
//   - sqsworker.scheduler.ticks {tick} [sqsworker_scheduler_ticks_total]: ticks by
//     schedule and outcome: "enqueued" (the tick's message was sent once and the send
//     recorded), "resent" (recorded after more than one send: an earlier send failed or
//     was not recorded, so a copy may be on the queue too, which the consumer's
//     idempotency record absorbs), "skipped" (missed beyond the schedule's CatchUp; a
//     scheduler.EventTicksSkipped adds its Skipped count) and "failed" (a pass of the
//     schedule failed; it is tried again while the replica leads, so one tick can fail
//     more than once). Every tick is counted once as enqueued, resent or skipped;
//   - sqsworker.scheduler.tick.delay (s) histogram [sqsworker_scheduler_tick_delay_seconds]:
//     when an enqueued tick's message was sent minus the tick's scheduled time, by
//     schedule (a schedule's Jitter shows here);
//   - sqsworker.scheduler.leader {replica} up-down counter [sqsworker_scheduler_leader]:
//     1 while this replica holds the lease, 0 otherwise; summed over the replicas it is
//     the number of leaders, 1 when healthy;
//   - sqsworker.scheduler.leadership.gained {term}
//     [sqsworker_scheduler_leadership_gained_total], and
//     sqsworker.scheduler.leadership.lost {term}
//     [sqsworker_scheduler_leadership_lost_total] by reason ("renewal refused",
//     "expired", "fenced", "shutdown").
//
// Schedules come from the program, so their attribute sets are not bounded here; they
// are built once per schedule and outcome. ObserveScheduler is safe for concurrent use.
type Metrics struct {
	ticks, gained, lost metric.Int64Counter
	delay               metric.Float64Histogram
	leader              metric.Int64UpDownCounter
	ticksSets           instrument.Cache[tickKey, []metric.AddOption]
	delaySets           instrument.Cache[string, []metric.RecordOption] // by schedule
}

type tickKey struct{ schedule, outcome string }

// NewMetrics creates the instruments. It returns an error when the meter refuses one.
func NewMetrics(cfg Config) (*Metrics, error) {
	build := instrument.New(cfg.MeterProvider, ScopeName)
	m := &Metrics{
		ticks:  build.Counter("sqsworker.scheduler.ticks", "{tick}", "Scheduler ticks by schedule and outcome."),
		delay:  build.Histogram("sqsworker.scheduler.tick.delay", instrument.Seconds, "When an enqueued tick's message was sent minus the tick's scheduled time.", instrument.DelayBuckets),
		leader: build.UpDownCounter("sqsworker.scheduler.leader", "{replica}", "1 while this replica holds the scheduler's lease."),
		gained: build.Counter("sqsworker.scheduler.leadership.gained", "{term}", "Times this replica took the scheduler's lease."),
		lost:   build.Counter("sqsworker.scheduler.leadership.lost", "{term}", "Times this replica lost the scheduler's lease, by reason."),
	}
	if err := build.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ObserveScheduler implements [scheduler.Observer].
func (m *Metrics) ObserveScheduler(ctx context.Context, ev scheduler.Event) {
	switch ev.Kind {
	case scheduler.EventLeadershipGained:
		m.leader.Add(ctx, 1)
		m.gained.Add(ctx, 1)
	case scheduler.EventLeadershipLost:
		m.leader.Add(ctx, -1)
		m.lost.Add(ctx, 1, metric.WithAttributes(otelsqsworker.KeyReason.String(ev.Reason)))
	case scheduler.EventTickEnqueued:
		outcome := TickEnqueued
		if ev.Attempt > 1 {
			outcome = TickResent
		}
		m.ticks.Add(ctx, 1, m.tickOptions(ev.Schedule, outcome)...)
		if !ev.Tick.IsZero() {
			m.delay.Record(ctx, max(ev.Time.Sub(ev.Tick), 0).Seconds(), m.delayOptions(ev.Schedule)...)
		}
	case scheduler.EventTicksSkipped:
		m.ticks.Add(ctx, ev.Skipped, m.tickOptions(ev.Schedule, TickSkipped)...)
	case scheduler.EventTickFailed:
		m.ticks.Add(ctx, 1, m.tickOptions(ev.Schedule, TickFailed)...)
	}
}

func (m *Metrics) tickOptions(schedule, outcome string) []metric.AddOption {
	return m.ticksSets.Get(tickKey{schedule, outcome}, func(key tickKey) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(KeySchedule.String(key.schedule), KeyTickOutcome.String(key.outcome)))}
	})
}

func (m *Metrics) delayOptions(schedule string) []metric.RecordOption {
	return m.delaySets.Get(schedule, func(schedule string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(KeySchedule.String(schedule)))}
	})
}
