package otelsqsworker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda/emf"
	"github.com/sqsworker/sqsworker/otelsqsworker"
)

// TestEveryReducerCountsAnEventAlike walks every event kind (a finished one with every
// outcome kind) and checks that Stats, the OpenTelemetry metrics and the EMF line count
// it as its Tally says.
func TestEveryReducerCountsAnEventAlike(t *testing.T) {
	// The metric names of today's counts, which dashboards and alarms use; a count added
	// later is checked under the name its Metric gives.
	otelNames := map[sqsworker.Count]string{
		sqsworker.CountReceived: "sqsworker.messages.received", sqsworker.CountInFlight: "sqsworker.messages.in_flight",
		sqsworker.CountDeleted: "sqsworker.deletes", sqsworker.CountDeleteFailures: "sqsworker.delete.failures",
		sqsworker.CountDeadLettered: "sqsworker.dead_letter.sends", sqsworker.CountDeadLetterFailures: "sqsworker.dead_letter.send_failures",
		sqsworker.CountRescheduleFailures: "sqsworker.reschedule.failures", sqsworker.CountReleased: "sqsworker.messages.released",
		sqsworker.CountHeartbeats: "sqsworker.heartbeats", sqsworker.CountHeartbeatFailures: "sqsworker.heartbeat.failures",
		sqsworker.CountAbandoned: "sqsworker.handlers.abandoned",
	}
	for count, otelName := range otelNames { // the names dashboards know stay
		require.Equal(t, otelName, count.Metric().Name)
	}
	emfNames := map[sqsworker.Count]string{
		sqsworker.CountReceived: "Received", sqsworker.CountDeleted: "Succeeded", sqsworker.CountFailed: "Failed",
		sqsworker.CountDeferred: "Deferred", sqsworker.CountDeadLettered: "DeadLettered",
		sqsworker.CountDeadLetterFailures: "DeadLetterFailures", sqsworker.CountReleased: "Released", sqsworker.CountAbandoned: "Abandoned",
	}
	var outcomes []sqsworker.OutcomeKind
	for kind := sqsworker.OutcomeKind(0); kind.String() != "unknown"; kind++ {
		outcomes = append(outcomes, kind)
	}
	for _, kind := range sqsworker.EventKinds() {
		kindOutcomes := []sqsworker.OutcomeKind{sqsworker.OutcomeDelete}
		if kind == sqsworker.EventFinished {
			kindOutcomes = outcomes
		}
		for _, outcome := range kindOutcomes {
			ev := sqsworker.Event{Kind: kind, Message: newMessage("email"), Outcome: sqsworker.Outcome{Kind: outcome}}
			name := kind.String() + "/" + outcome.String()
			tally := ev.Tally()

			var counter sqsworker.Counter
			counter.Observe(context.Background(), ev)
			stats := counter.Stats()
			// Stats has one field per count, in the counts' order.
			fields := reflect.ValueOf(stats)
			require.Equal(t, int(sqsworker.NumCounts), fields.NumField(), "every count is a Stats field")

			reader := sdkmetric.NewManualReader()
			metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Registered: emailRegistered})
			require.NoError(t, err)
			metrics.Observe(context.Background(), ev)
			collected := sums(t, reader)

			var line bytes.Buffer
			recorder := emf.New(emf.Config{Writer: &line})
			_, _ = recorder.Wrap(func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
				recorder.Observe(ctx, ev)
				return events.SQSEventResponse{}, nil
			})(context.Background(), events.SQSEvent{})
			var written map[string]any
			require.NoError(t, json.Unmarshal(line.Bytes(), &written), name)

			for count := range sqsworker.NumCounts {
				require.Equal(t, tally[count], fields.Field(int(count)).Int(), "%s: Stats count %d", name, count)
				if otelName := count.Metric().Name; otelName != "" {
					require.Equal(t, tally[count], collected[otelName+"{messaging.destination.name=orders}"], "%s: %s", name, otelName)
				}
				if emfName, ok := emfNames[count]; ok {
					require.Equal(t, float64(tally[count]), written[emfName], "%s: EMF %s", name, emfName)
				}
			}
			finished := int64(0)
			for key, value := range collected {
				if len(key) > len("sqsworker.messages.finished{") && key[:len("sqsworker.messages.finished{")] == "sqsworker.messages.finished{" {
					finished += value
				}
			}
			want := tally[sqsworker.CountFailed] + tally[sqsworker.CountDeferred]
			if kind == sqsworker.EventFinished && outcome == sqsworker.OutcomeCancelled {
				want = 1 // neither failed nor deferred, still a handler call finished by its outcome
			}
			require.Equal(t, want, map[bool]int64{true: finished, false: 0}[outcome != sqsworker.OutcomeDelete], "%s: finished by outcome", name)
		}
	}
}
