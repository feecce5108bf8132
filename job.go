package sqsworker

import (
	"strconv"
	"time"
)

// Message attributes that carry a job's metadata from a producer (package producer, or
// any SQS client in any language) to the consumer. They are ordinary SQS message
// attributes, so the body stays the job's own payload.
const (
	// AttributeJobType names the job type a [ServeMux] routes on (String), for example
	// "welcome-email".
	AttributeJobType = "job-type"
	// AttributeIdempotencyKey carries the job's idempotency key (String); the idempotency
	// middleware uses it by default when it is present.
	AttributeIdempotencyKey = "idempotency-key"
	// AttributeDueAt carries the time a delayed job is due, in Unix epoch milliseconds
	// (Number). The producer sets it for delays longer than SQS's 15-minute DelaySeconds
	// limit; its delay middleware re-sends the job until it is due.
	AttributeDueAt = "due-at"
)

// JobType returns the job type of the message: its [AttributeJobType] attribute, or ""
// when it has none.
func (m *Message) JobType() string {
	value, _ := m.StringAttribute(AttributeJobType)
	return value
}

// DueAt returns the time the message's job is due ([AttributeDueAt]), and false when the
// message carries no due time or one that is not a positive number of milliseconds.
func (m *Message) DueAt() (time.Time, bool) {
	value, ok := m.StringAttribute(AttributeDueAt)
	if !ok {
		return time.Time{}, false
	}
	milliseconds, err := strconv.ParseInt(value, 10, 64)
	if err != nil || milliseconds <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(milliseconds), true
}
