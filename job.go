package sqsworker

import (
	"fmt"
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
	// limit; the worker's [DelayMiddleware] re-sends the job until it is due.
	AttributeDueAt = "due-at"
	// AttributeJobID carries the job's id (String): a ULID that package producer gives
	// every job it prepares (or Job.ID when the sender chose one). It stays with the job
	// through retries (the same message), delay hops, the host's dead-letter send and
	// redrives (each copies the message's attributes), while the SQS message id changes
	// with every new message; job records and cancellation are keyed by it.
	AttributeJobID = "job-id"
	// AttributeEncryption marks an encrypted body (String): it holds the envelope header
	// of package encrypt (format version, the KMS key ARN, the encrypted data key and
	// the nonce, base64-encoded), and the body is the base64 AES-256-GCM ciphertext. It
	// is one of the 10 SQS attributes; tools show such a body as "encrypted (key ...)".
	AttributeEncryption = "payload-encryption"
)

// JobType returns the job type of the message: its [AttributeJobType] attribute, or ""
// when it has none.
func (m *Message) JobType() string {
	value, _ := m.StringAttribute(AttributeJobType)
	return value
}

// JobID returns the job id of the message: its [AttributeJobID] attribute, or "" when it
// has none (a message not sent through package producer).
func (m *Message) JobID() string {
	value, _ := m.StringAttribute(AttributeJobID)
	return value
}

// Due-time reasons and bound; see [Message.DueIn].
const (
	// DefaultDueAtHorizon is how far ahead a due time may lie: 365 days. Each hop of a
	// delayed job is a new message, so neither the queue's retention period nor the
	// redrive policy's maxReceiveCount ever ends a chain of hops: only this bound does.
	// A year holds the long delays jobs are used for (a trial's end, a renewal, a yearly
	// reminder; work further out belongs in a database or a schedule) and bounds what
	// one message costs: a year of 15-minute hops is 35,040 sends, receives and deletes
	// (about 0.04 USD at 0.40 USD per million requests). A due time in microseconds or
	// nanoseconds instead of milliseconds lies thousands of years ahead and is refused
	// at once.
	DefaultDueAtHorizon = 365 * 24 * time.Hour
	// ReasonDueAtTooFar is the [PermanentError] reason of a job whose due time lies
	// further ahead than the horizon.
	ReasonDueAtTooFar = "DueAtTooFar"
	// ReasonMalformedDueAt is the [PermanentError] reason of a job whose due-at
	// attribute is not a positive integer of Unix epoch milliseconds.
	ReasonMalformedDueAt = "MalformedDueAt"
)

// DueIn returns how long the message's job has still to wait at now: 0 when it carries
// no due time ([AttributeDueAt]) or is due. A due time more than horizon after now is a
// [PermanentError] with reason [ReasonDueAtTooFar]; a due-at attribute that is not a
// positive integer of milliseconds (a String or Binary value, "", "0", "soon") one with
// [ReasonMalformedDueAt]: the host dead-letters such a job after that one receive
// instead of re-sending or deferring it without end. A horizon of 0 or less means
// [DefaultDueAtHorizon]. [DelayMiddleware] and the [ServeMux] both decide through it.
func (m *Message) DueIn(now time.Time, horizon time.Duration) (time.Duration, error) {
	attribute, ok := m.MessageAttributes[AttributeDueAt]
	if !ok {
		return 0, nil
	}
	if horizon <= 0 {
		horizon = DefaultDueAtHorizon
	}
	due, ok := m.DueAt()
	if !ok {
		return 0, Permanent(ReasonMalformedDueAt, fmt.Errorf("%s attribute %q (%s) is not a positive integer of Unix epoch milliseconds", AttributeDueAt, truncate(attribute.StringValue, 32), attribute.DataType))
	}
	wait := due.Sub(now)
	if wait > horizon {
		return 0, Permanent(ReasonDueAtTooFar, fmt.Errorf("due at %s, %s from now: further than the due-time horizon of %s", due.UTC().Format(time.RFC3339), wait.Round(time.Second), horizon))
	}
	return max(wait, 0), nil
}

// truncate returns at most n bytes of s, "…" when cut (for error texts quoting input).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
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
