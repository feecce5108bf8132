package oteloutbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker/internal/metrictest"
	"github.com/sqsworker/sqsworker/otelsqsworker/oteloutbox"
	"github.com/sqsworker/sqsworker/outbox"
)

// TestMetrics feeds a relay's events (4 published: 2 email and 1 plain on PostgreSQL,
// 1 email on DynamoDB with the writer's clock ahead; 1 refused, 2 retries, a store
// error, two backlog reports; 2 failures: one refused, one out of attempts) and reads
// exactly those counts, lags and the last backlog, failed and parked gauges.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	metrics, err := oteloutbox.NewMetrics(oteloutbox.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	ctx := context.Background()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	queueURL := "http://127.0.0.1:4566/000000000000/orders"
	email := &outbox.Entry{ID: "e1", QueueURL: queueURL, Type: "email", CreatedAt: created}
	plain := &outbox.Entry{ID: "e2", QueueURL: queueURL, CreatedAt: created}
	for _, ev := range []outbox.Event{
		{Kind: outbox.EventPublished, Store: "postgres", Entry: email, Time: created.Add(250 * time.Millisecond)},
		{Kind: outbox.EventPublished, Store: "postgres", Entry: email, Time: created.Add(750 * time.Millisecond)},
		{Kind: outbox.EventPublished, Store: "postgres", Entry: plain, Time: created.Add(2 * time.Second)},
		{Kind: outbox.EventPublished, Store: "dynamodb", Entry: email, Time: created.Add(-time.Second)}, // lag 0
		{Kind: outbox.EventFailed, Store: "postgres", Entry: email, Err: fmt.Errorf("%w: InvalidParameterValue", outbox.ErrRefused)},
		{Kind: outbox.EventFailed, Store: "postgres", Entry: email, Err: fmt.Errorf("%w: QueueDoesNotExist", outbox.ErrAttemptsExhausted)},
		{Kind: outbox.EventRetry, Store: "postgres", Entry: plain, Err: errors.New("throttled")},
		{Kind: outbox.EventRetry, Store: "postgres", Entry: plain, Err: errors.New("throttled")},
		{Kind: outbox.EventStoreError, Store: "postgres", Err: errors.New("connection reset")},
		{Kind: outbox.EventBacklog, Store: "postgres", Backlog: 40, Lag: 3 * time.Second},
		{Kind: outbox.EventBacklog, Store: "postgres", Backlog: 12, Lag: 1500 * time.Millisecond, Failed: 2, Parked: 1},
	} {
		metrics.ObserveOutbox(ctx, ev)
	}
	pg := "messaging.destination.name=orders,sqsworker.job.type=email,sqsworker.outbox.store=postgres"
	pgPlain := "messaging.destination.name=orders,sqsworker.job.type=,sqsworker.outbox.store=postgres"
	dynamo := "messaging.destination.name=orders,sqsworker.job.type=email,sqsworker.outbox.store=dynamodb"
	pgFailed := func(failure string) string {
		return "messaging.destination.name=orders,sqsworker.job.type=email,sqsworker.outbox.failure=" + failure + ",sqsworker.outbox.store=postgres"
	}
	require.Equal(t, map[string]float64{
		"sqsworker.outbox.entries.published{" + pg + "}":                           2,
		"sqsworker.outbox.entries.published{" + pgPlain + "}":                      1,
		"sqsworker.outbox.entries.published{" + dynamo + "}":                       1,
		"sqsworker.outbox.entries.failed{" + pgFailed("refused") + "}":             1,
		"sqsworker.outbox.entries.failed{" + pgFailed("attempts") + "}":            1,
		"sqsworker.outbox.entries.retried{" + pgPlain + "}":                        2,
		"sqsworker.outbox.store.errors{sqsworker.outbox.store=postgres}":           1,
		"sqsworker.outbox.lag.count{" + pg + "}":                                   2,
		"sqsworker.outbox.lag.sum{" + pg + "}":                                     1,
		"sqsworker.outbox.lag.count{" + pgPlain + "}":                              1,
		"sqsworker.outbox.lag.sum{" + pgPlain + "}":                                2,
		"sqsworker.outbox.lag.count{" + dynamo + "}":                               1,
		"sqsworker.outbox.lag.sum{" + dynamo + "}":                                 0,
		"sqsworker.outbox.backlog{sqsworker.outbox.store=postgres}":                12,
		"sqsworker.outbox.oldest_unpublished.age{sqsworker.outbox.store=postgres}": 1.5,
		"sqsworker.outbox.failed{sqsworker.outbox.store=postgres}":                 2,
		"sqsworker.outbox.groups.parked{sqsworker.outbox.store=postgres}":          1,
	}, metrictest.Collect(t, reader))
}
