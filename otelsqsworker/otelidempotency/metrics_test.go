package otelidempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/metrictest"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency"
)

// TestMetrics runs the middleware (on a memory store) over a keyed message, its
// completed duplicate and five keyless messages in bypass mode (scenario N03's bypass
// count), then feeds kinds the middleware reports only on store faults, and reads
// exactly those counts (every kind has its own series: a malformed record is not
// "unknown").
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	metrics, err := otelidempotency.NewMetrics(otelidempotency.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	ctx := context.Background()
	calls := 0
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		calls++
		return nil
	}), idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField("orderId"), KeyOptional: true, Observer: metrics}))
	for i, body := range []string{`{"orderId":"O-1"}`, `{"orderId":"O-1"}`, `{"amount":7}`, `{"amount":9}`, `{"orderId":""}`, `{"orderId":null}`, `{}`} {
		require.NoError(t, handler.Handle(ctx, &sqsworker.Message{ID: string(rune('a' + i)), Body: body, ReceiveCount: 1}))
	}
	require.Equal(t, 6, calls, "O-1 once and the five keyless messages")
	metrics.ObserveIdempotency(ctx, idempotency.Event{Kind: idempotency.EventStoreError, Err: errors.New("throttled")})
	metrics.ObserveIdempotency(ctx, idempotency.Event{Kind: idempotency.EventMalformedRecord, Err: idempotency.ErrMalformedRecord})
	metrics.ObserveIdempotency(ctx, idempotency.Event{Kind: idempotency.EventKind(99)})
	require.Equal(t, map[string]float64{
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=claimed}":             1,
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=completed-duplicate}": 1,
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=bypassed}":            5,
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=store-error}":         1,
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=malformed-record}":    1,
		"sqsworker.idempotency.decisions{sqsworker.idempotency.decision=unknown}":             1,
	}, metrictest.Collect(t, reader))
}

// TestObserveDoesNotAllocate: the hot path reuses the attribute sets built once.
func TestObserveDoesNotAllocate(t *testing.T) {
	metrics, err := otelidempotency.NewMetrics(otelidempotency.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	require.NoError(t, err)
	ctx := context.Background()
	ev := idempotency.Event{Kind: idempotency.EventClaimed}
	metrics.ObserveIdempotency(ctx, ev)
	require.Zero(t, testing.AllocsPerRun(100, func() { metrics.ObserveIdempotency(ctx, ev) }))
}
