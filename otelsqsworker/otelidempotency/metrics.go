package otelidempotency

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
)

// ScopeName is the instrumentation scope of the meter this package uses.
const ScopeName = "github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency"

// KeyDecision is the attribute key of a decision: idempotency.EventKind's String
// ("claimed", "bypassed", "key-missing", "payload-invalid", "insufficient-time",
// "completed-duplicate", "deferred", "payload-mismatch", "store-error",
// "complete-failed", "lease-lost").
const KeyDecision = attribute.Key("sqsworker.idempotency.decision")

// Config configures [NewMetrics].
type Config struct {
	// MeterProvider records the instruments; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Metrics is an [idempotency.Observer] that records OpenTelemetry metrics of the
// middleware; pass it as idempotency.Config.Observer. Instruments (units as UCUM; the
// Prometheus name, from the OpenTelemetry Prometheus exporter, in brackets):
//
//   - sqsworker.idempotency.decisions {message} [sqsworker_idempotency_decisions_total]:
//     the middleware's decisions by KeyDecision. Alarm on "bypassed" and "key-missing"
//     rising (producers stopped sending keys: with Config.KeyOptional those messages
//     run unguarded), on "store-error" and "complete-failed" (the table refuses or
//     throttles), on "lease-lost" (handlers outlive their leases) and on
//     "malformed-record" (an item under an idempotency key that is not an idempotency
//     record: its messages fail until it is removed); "deferred" counts duplicates that
//     arrived while their original ran.
//
// ObserveIdempotency is safe for concurrent use and does not allocate.
type Metrics struct {
	decisions metric.Int64Counter
	// options holds one attribute set per kind, built once: index by EventKind (0 is
	// "unknown").
	options [][]metric.AddOption
}

// NewMetrics creates the instrument. It returns an error when the meter refuses it.
func NewMetrics(cfg Config) (*Metrics, error) {
	build := instrument.New(cfg.MeterProvider, ScopeName)
	counter := build.Counter("sqsworker.idempotency.decisions", instrument.Message, "Decisions of the idempotency middleware, by decision.")
	if err := build.Err(); err != nil {
		return nil, err
	}
	kinds := idempotency.EventKinds()
	m := &Metrics{decisions: counter, options: make([][]metric.AddOption, int(kinds[len(kinds)-1])+1)}
	for kind := range m.options {
		m.options[kind] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(KeyDecision.String(idempotency.EventKind(kind).String())))}
	}
	return m, nil
}

// ObserveIdempotency implements [idempotency.Observer]: it adds 1 to the decision's
// count. Kinds this package does not know are counted as "unknown".
func (m *Metrics) ObserveIdempotency(ctx context.Context, ev idempotency.Event) {
	kind := ev.Kind
	if kind < 0 || int(kind) >= len(m.options) {
		kind = 0 // String: "unknown"
	}
	m.decisions.Add(ctx, 1, m.options[kind]...)
}
