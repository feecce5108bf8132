// Package metrictest reads what an OpenTelemetry SDK manual reader collected, for the
// tests of otelsqsworker's packages.
package metrictest

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Collect collects reader once and returns every data point as "name{attributes}" →
// value (sums and gauges), and "name.count{...}" and "name.sum{...}" for histograms.
// Values are rounded to the microsecond (1e-6), so that sums of durations compare
// exactly.
func Collect(t testing.TB, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var data metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &data))
	out := map[string]float64{}
	put := func(name string, attrs attribute.Set, value float64) {
		out[name+"{"+attrs.Encoded(attribute.DefaultEncoder())+"}"] = math.Round(value*1e6) / 1e6
	}
	for _, scope := range data.ScopeMetrics {
		for _, m := range scope.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					put(m.Name, p.Attributes, p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					put(m.Name+".count", p.Attributes, float64(p.Count))
					put(m.Name+".sum", p.Attributes, p.Sum)
				}
			default:
				t.Fatalf("metrictest: %s has data of type %T", m.Name, m.Data)
			}
		}
	}
	return out
}
