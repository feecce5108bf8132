package otelscheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker/internal/metrictest"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelscheduler"
	"github.com/sqsworker/sqsworker/scheduler"
)

// TestMetrics feeds two terms of a replica (ticks enqueued, resent, skipped and
// failed in the first, lost to a fence; regained, then released at shutdown) and reads
// exactly those counts, delays and leadership after each.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	metrics, err := otelscheduler.NewMetrics(otelscheduler.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	ctx := context.Background()
	tick := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, ev := range []scheduler.Event{
		{Kind: scheduler.EventLeadershipGained, Token: 1},
		{Kind: scheduler.EventTickClaimed, Schedule: "report", Tick: tick}, // not counted: its send follows
		{Kind: scheduler.EventTickEnqueued, Schedule: "report", Tick: tick, Time: tick.Add(200 * time.Millisecond)},
		{Kind: scheduler.EventTickEnqueued, Schedule: "report", Tick: tick.Add(time.Minute), Time: tick.Add(time.Minute + 300*time.Millisecond)},
		{Kind: scheduler.EventTickEnqueued, Schedule: "cleanup", Tick: tick, Time: tick.Add(2 * time.Second)},
		{Kind: scheduler.EventTickEnqueued, Schedule: "report", Tick: tick.Add(2 * time.Minute), Time: tick.Add(2*time.Minute + 500*time.Millisecond), Attempt: 2},
		{Kind: scheduler.EventTicksSkipped, Schedule: "report", Tick: tick, Skipped: 5},
		{Kind: scheduler.EventTickFailed, Schedule: "cleanup", Tick: tick, Err: errors.New("throttled")},
		{Kind: scheduler.EventLeadershipLost, Token: 1, Reason: "fenced"},
		{Kind: scheduler.EventLeadershipGained, Token: 3},
	} {
		metrics.ObserveScheduler(ctx, ev)
	}
	want := map[string]float64{
		"sqsworker.scheduler.ticks{sqsworker.schedule=report,sqsworker.tick.outcome=enqueued}":  2,
		"sqsworker.scheduler.ticks{sqsworker.schedule=report,sqsworker.tick.outcome=resent}":    1,
		"sqsworker.scheduler.ticks{sqsworker.schedule=report,sqsworker.tick.outcome=skipped}":   5,
		"sqsworker.scheduler.ticks{sqsworker.schedule=cleanup,sqsworker.tick.outcome=enqueued}": 1,
		"sqsworker.scheduler.ticks{sqsworker.schedule=cleanup,sqsworker.tick.outcome=failed}":   1,
		"sqsworker.scheduler.tick.delay.count{sqsworker.schedule=report}":                       3,
		"sqsworker.scheduler.tick.delay.sum{sqsworker.schedule=report}":                         1,
		"sqsworker.scheduler.tick.delay.count{sqsworker.schedule=cleanup}":                      1,
		"sqsworker.scheduler.tick.delay.sum{sqsworker.schedule=cleanup}":                        2,
		"sqsworker.scheduler.leader{}":                                 1,
		"sqsworker.scheduler.leadership.gained{}":                      2,
		"sqsworker.scheduler.leadership.lost{sqsworker.reason=fenced}": 1,
	}
	require.Equal(t, want, metrictest.Collect(t, reader))

	metrics.ObserveScheduler(ctx, scheduler.Event{Kind: scheduler.EventLeadershipLost, Token: 3, Reason: "shutdown"})
	want["sqsworker.scheduler.leader{}"] = 0
	want["sqsworker.scheduler.leadership.lost{sqsworker.reason=shutdown}"] = 1
	require.Equal(t, want, metrictest.Collect(t, reader))
}
