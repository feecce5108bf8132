package producer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Job is one job to send. Exactly one of Payload and Body is set.
type Job struct {
	// ID is the job's id, sent as the [sqsworker.AttributeJobID] attribute (one of the
	// 10 SQS allows), kept through retries, delay hops, dead letters and redrives. If
	// empty, [Prepare] gives the job a new one ([NewJobID], a ULID); a chosen id is valid
	// UTF-8 of at most [MaxJobIDBytes]. Choose it only to make it known before the send
	// (to record it with the business row, say); two jobs should never share one.
	ID string
	// Type is the job type, sent as the [sqsworker.AttributeJobType] attribute that a
	// [sqsworker.ServeMux] routes on. Empty sends no type (a plain message).
	Type string
	// Payload is encoded with encoding/json as the body.
	Payload any
	// Body is sent as it is (it must be non-empty; SQS accepts only some Unicode
	// characters: #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF).
	Body string
	// Delay is how long SQS keeps the job invisible before it is first delivered. Up to
	// Config.MaxHop (15 min) it is DelaySeconds, rounded up to whole seconds; longer
	// delays are sent as hops with the [sqsworker.AttributeDueAt] attribute (standard
	// queues only: FIFO queues take no per-message delay), up to Config.DueAtHorizon
	// (365 days by default).
	Delay time.Duration
	// IdempotencyKey is sent as the [sqsworker.AttributeIdempotencyKey] attribute, which
	// the idempotency middleware uses by default.
	IdempotencyKey string
	// GroupID is the message group id: required on FIFO queues (ordering), and on
	// standard queues the tenant key of SQS fair queues.
	GroupID string
	// DeduplicationID is the FIFO deduplication id (5-minute window). FIFO queues only;
	// without it the queue must have content-based deduplication.
	DeduplicationID string
	// UniqueKey makes the job unique: while the key is taken (UniqueFor), another Send
	// with the same key sends nothing and returns a [*DuplicateJobError] with the first
	// job's message id. On a standard queue it needs Config.Unique; on a FIFO queue it is
	// the deduplication id (when DeduplicationID is empty): SQS accepts a duplicate sent
	// within its 5-minute deduplication interval without delivering it, and Send returns
	// no error for it.
	UniqueKey string
	// UniqueFor is how long UniqueKey stays taken after the send (the unique window);
	// if zero, DefaultUniqueFor. At least MinUniqueFor (1 s), and longer than Delay (a
	// key that expired before the job runs would let a duplicate in).
	UniqueFor time.Duration
	// UniqueMode says whether the key is freed before its window ends: when the job is
	// done or has started, by [UniqueMiddleware] on the consumer side (standard queues
	// only). The zero value is UniqueUntilWindowEnds.
	UniqueMode UniqueMode
	// Attributes are further message attributes. The producer's own (job id, job
	// type, idempotency key, due time, trace context) take precedence; SQS allows 10 in
	// all, so a job has room for 8 of its own with a type (9 without), one fewer with
	// Config.Encrypter.
	Attributes map[string]types.MessageAttributeValue
}

// jobBody returns the body of a job: its raw Body or its JSON-encoded Payload.
func jobBody(job Job) (string, error) {
	switch {
	case job.Payload != nil && job.Body != "":
		return "", errors.New("producer: the job sets both Payload and Body")
	case job.Body != "":
		return job.Body, nil
	case job.Payload == nil:
		return "", errors.New("producer: the job has neither Payload nor Body (SQS takes no empty body)")
	}
	encoded, err := json.Marshal(job.Payload)
	if err != nil {
		return "", fmt.Errorf("producer: encoding the %q job's payload: %w", job.Type, err)
	}
	return string(encoded), nil
}
