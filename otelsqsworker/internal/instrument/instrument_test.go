package instrument_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
)

// TestBuilderKeepsTheProjectsNaming: an instrument outside the sqsworker. and messaging.
// names, or without a unit or description, is an error of the whole build; the others
// are built.
func TestBuilderKeepsTheProjectsNaming(t *testing.T) {
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	build := instrument.New(provider, "test")
	require.NotNil(t, build.Counter("sqsworker.things", "{thing}", "Things."))
	require.NotNil(t, build.Histogram("messaging.process.duration", instrument.Seconds, "Durations.", instrument.DurationBuckets))
	require.NoError(t, build.Err())
	build.Counter("things", "{thing}", "Things.")
	build.Gauge("sqsworker.level", "", "Level.")
	err := build.Err()
	require.ErrorContains(t, err, `instrument "things": not under sqsworker. or messaging.`)
	require.ErrorContains(t, err, `instrument "sqsworker.level": no unit or no description`)
}
