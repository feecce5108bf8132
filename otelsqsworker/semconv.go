package otelsqsworker

import (
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
)

// OpenTelemetry's messaging metrics (semantic conventions for messaging client metrics,
// https://opentelemetry.io/docs/specs/semconv/messaging/messaging-metrics/, status
// development): the names, units and bucket boundaries the convention states.
const (
	metricConsumed          = "messaging.client.consumed.messages"
	metricProcessDuration   = "messaging.process.duration"
	metricSent              = "messaging.client.sent.messages"
	metricOperationDuration = "messaging.client.operation.duration"
)

// conventionBuckets are the boundaries the convention states for its durations (s).
var conventionBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// OptInEnv is the environment variable OpenTelemetry's semantic conventions name for
// choosing conventions still in development: [Metrics] adds the messaging convention's
// instruments when it lists "messaging" or "messaging/dup" (comma-separated, as
// "http,messaging/dup").
const OptInEnv = "OTEL_SEMCONV_STABILITY_OPT_IN"

// messagingOptedIn reports whether value (of OptInEnv) lists messaging or messaging/dup.
func messagingOptedIn(value string) bool {
	for part := range strings.SplitSeq(value, ",") {
		if part = strings.TrimSpace(part); part == "messaging" || part == "messaging/dup" {
			return true
		}
	}
	return false
}

// conventions are the messaging convention's instruments of [Metrics].
type conventions struct {
	consumed metric.Int64Observable
	process  metric.Float64Histogram
}

// newConventions builds them when cfg or the environment asks for them, nil otherwise.
func newConventions(cfg MetricsConfig, build *instrument.Builder) *conventions {
	if !cfg.MessagingConventions && !messagingOptedIn(os.Getenv(OptInEnv)) {
		return nil
	}
	return &conventions{
		consumed: build.ObservableCounter(metricConsumed, instrument.Message, "Number of messages that were delivered to the application.", false),
		process:  build.Histogram(metricProcessDuration, instrument.Seconds, "Duration of processing operation.", conventionBuckets),
	}
}

// consumedSet is the attribute set of a queue's consumed messages.
func consumedSet(queue string) attribute.Set {
	return attribute.NewSet(keySystem.String(systemSQS), keyOperation.String("receive"), KeyQueue.String(queue))
}

// processMeasurement is the attribute set of a queue's processing of one outcome key:
// error.type is the failure's reason (as bounded for sqsworker.messages.finished), none
// for a handler call that did not fail.
func processMeasurement(queue string, key outcomeKey) *measurement {
	attributes := []attribute.KeyValue{keySystem.String(systemSQS), keyOperation.String("process"), KeyQueue.String(queue)}
	if (sqsworker.Outcome{Kind: key.outcome}).Failed() {
		reason := key.reason
		if reason == "" {
			reason = "_OTHER"
		}
		attributes = append(attributes, keyErrorType.String(reason))
	}
	return newMeasurement(attributes...)
}
