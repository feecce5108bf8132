// Package otelsqsworker instruments sqsworker with OpenTelemetry.
package otelsqsworker
