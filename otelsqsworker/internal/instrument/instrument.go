// Package instrument builds the OpenTelemetry instruments of this module's packages in
// one way: one meter per package scope (the global MeterProvider when none is given),
// names under the project's prefix (sqsworker.) or OpenTelemetry's messaging conventions
// (messaging.), units as UCUM, a description on every instrument, and every refusal of
// one package's instruments joined into one error.
package instrument

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// Units (UCUM, as OpenTelemetry's conventions write them).
const (
	Seconds = "s"
	Message = "{message}"
)

// Builder creates one package's instruments on its meter and keeps the first errors.
// It is not safe for concurrent use: build, then check Err once.
type Builder struct {
	meter metric.Meter
	errs  []error
}

// New returns a Builder on the meter of scope from provider, or from
// otel.GetMeterProvider() when provider is nil.
func New(provider metric.MeterProvider, scope string) *Builder {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	return &Builder{meter: provider.Meter(scope)}
}

// Meter returns the meter, for RegisterCallback.
func (b *Builder) Meter() metric.Meter { return b.meter }

// Err returns every error met while building, joined (nil when none).
func (b *Builder) Err() error { return errors.Join(b.errs...) }

// check records a name outside the project's prefixes, or an instrument without a unit
// or description, and the meter's own error.
func (b *Builder) check(name, unit, description string, err error) {
	if !strings.HasPrefix(name, "sqsworker.") && !strings.HasPrefix(name, "messaging.") {
		b.errs = append(b.errs, fmt.Errorf("instrument %q: not under sqsworker. or messaging.", name))
	}
	if unit == "" || description == "" {
		b.errs = append(b.errs, fmt.Errorf("instrument %q: no unit or no description", name))
	}
	if err != nil {
		b.errs = append(b.errs, err)
	}
}

// Counter returns a synchronous int64 counter.
func (b *Builder) Counter(name, unit, description string) metric.Int64Counter {
	i, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// UpDownCounter returns a synchronous int64 up-down counter.
func (b *Builder) UpDownCounter(name, unit, description string) metric.Int64UpDownCounter {
	i, err := b.meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// Histogram returns a float64 histogram with the bucket boundaries given.
func (b *Builder) Histogram(name, unit, description string, buckets []float64) metric.Float64Histogram {
	i, err := b.meter.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(description), metric.WithExplicitBucketBoundaries(buckets...))
	b.check(name, unit, description, err)
	return i
}

// IntHistogram returns an int64 histogram with the bucket boundaries given.
func (b *Builder) IntHistogram(name, unit, description string, buckets []float64) metric.Int64Histogram {
	i, err := b.meter.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(description), metric.WithExplicitBucketBoundaries(buckets...))
	b.check(name, unit, description, err)
	return i
}

// Gauge returns a synchronous int64 gauge.
func (b *Builder) Gauge(name, unit, description string) metric.Int64Gauge {
	i, err := b.meter.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// FloatGauge returns a synchronous float64 gauge.
func (b *Builder) FloatGauge(name, unit, description string) metric.Float64Gauge {
	i, err := b.meter.Float64Gauge(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// ObservableCounter returns an int64 counter read by a callback; with upDown an up-down
// counter.
func (b *Builder) ObservableCounter(name, unit, description string, upDown bool) metric.Int64Observable {
	var i metric.Int64Observable
	var err error
	if upDown {
		i, err = b.meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	} else {
		i, err = b.meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	}
	b.check(name, unit, description, err)
	return i
}

// ObservableGauge returns an int64 gauge read by a callback.
func (b *Builder) ObservableGauge(name, unit, description string) metric.Int64ObservableGauge {
	i, err := b.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// FloatObservableGauge returns a float64 gauge read by a callback.
func (b *Builder) FloatObservableGauge(name, unit, description string) metric.Float64ObservableGauge {
	i, err := b.meter.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(description))
	b.check(name, unit, description, err)
	return i
}

// Cache holds one value per key, built once: the attribute sets (or the options that
// carry them) of a package's measurements, found again without allocating. It is safe for
// concurrent use; the zero value is ready.
type Cache[K comparable, V any] struct{ m sync.Map }

// Get returns key's value, building it the first time (two racing builds keep one).
func (c *Cache[K, V]) Get(key K, build func(K) V) V {
	if cached, ok := c.m.Load(key); ok {
		return cached.(V)
	}
	built, _ := c.m.LoadOrStore(key, build(key))
	return built.(V)
}
