package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// AttributeOutboxID is the message attribute that carries an entry's id. The consumer
// can key its idempotency on it (the idempotency key attribute carries the same id
// unless the job sets its own IdempotencyKey).
const AttributeOutboxID = "outbox-id"

// Entry is one job in an outbox: what the relay sends, and, for a failed entry, why it
// was refused.
type Entry struct {
	// ID is the entry's stable id: 32 lowercase hex digits, the first 12 the creation
	// time in Unix milliseconds. It is the FIFO deduplication id and the default
	// idempotency key.
	ID string
	// QueueURL is the queue the job goes to.
	QueueURL string
	// Type is the job type (empty for a plain message).
	Type string
	// Body is the message body: the job's Body or its JSON-encoded Payload.
	Body string
	// GroupID is the message group id (FIFO queues: the order unit).
	GroupID string
	// IdempotencyKey is the job's IdempotencyKey, or ID.
	IdempotencyKey string
	// Delay is the job's delivery delay (standard queues), in whole seconds.
	Delay time.Duration
	// Attributes are the job's own message attributes (String and Number only).
	Attributes map[string]Attribute
	// CreatedAt is when the entry was made (the writer's clock, millisecond precision).
	CreatedAt time.Time
	// Attempts is the number of sends that failed so far (0 for an entry never tried, or
	// one retried with [DynamoDB.Retry] or [Postgres.Retry]). An attempt is counted when
	// its relay records the failure; a relay that dies during a send counts none.
	Attempts int
	// NextAttemptAt is when a relay may send the entry again after a failed attempt
	// (zero: at once).
	NextAttemptAt time.Time
	// LastError is the error of the last failed attempt.
	LastError string
	// FailedAt and FailureReason are set on a failed entry: one SQS refused, one that
	// cannot be decoded, or one whose attempts ran out. FailureReason wraps
	// [ErrRefused], [ErrDamaged] or [ErrAttemptsExhausted] in its text.
	FailedAt      time.Time
	FailureReason string
}

// MaxDelay is the longest Job.Delay an entry takes: the delay is stored in whole
// seconds as a 32-bit number (PostgreSQL's integer column). Longer delays are refused
// when the job is written. (The producer sends delays beyond SQS's 15 minutes as hops.)
const MaxDelay = math.MaxInt32 * time.Second

// Ordered reports whether e's message group must be published in order: its queue is
// FIFO and it has a group. A failed ordered entry parks its group.
func (e Entry) Ordered() bool { return e.GroupID != "" && sqsinfo.IsFIFOName(e.QueueURL) }

// ParkedGroup is a FIFO message group whose earliest unpublished entry failed: no
// later entry of the group is sent (SQS would deliver them out of order otherwise)
// until that entry is retried ([DynamoDB.Retry], [Postgres.Retry]) or skipped
// ([DynamoDB.Skip], [Postgres.Skip]). Other groups go on.
type ParkedGroup struct {
	QueueURL, GroupID string
	// Entry is the failed entry that parks the group, with its reason.
	Entry Entry
	// Waiting is the number of unpublished entries of the group behind it (at most
	// the listing's limit on DynamoDB, which counts them with a query per group).
	Waiting int
}

// Summary is the state of an outbox.
type Summary struct {
	// Unpublished is the number of entries waiting to be published, including those
	// waiting for their next attempt and those behind a parked group.
	Unpublished int
	// OldestUnpublished is the age of the oldest unpublished entry (0 when none).
	OldestUnpublished time.Duration
	// Failed is the number of failed entries (the heads of parked groups included).
	Failed int
	// ParkedGroups is the number of parked FIFO message groups.
	ParkedGroups int
}

// Errors a failed entry's reason wraps, and [ErrNotFailed].
var (
	// ErrRefused: SQS refused the entry, or the producer's checks did (too large
	// without a claim check, an invalid attribute): sending it again cannot succeed.
	ErrRefused = errors.New("outbox: entry refused by SQS")
	// ErrDamaged: the stored entry cannot be decoded (a missing or malformed field).
	ErrDamaged = errors.New("outbox: entry cannot be decoded")
	// ErrAttemptsExhausted: every attempt allowed by RelayConfig.MaxAttempts failed.
	ErrAttemptsExhausted = errors.New("outbox: entry not sent after its last attempt")
	// ErrNotFailed is returned (wrapped) by Retry and Skip for an id that names no
	// failed entry.
	ErrNotFailed = errors.New("outbox: no failed entry has this id")
)

// Attribute is a String or Number message attribute of an entry.
type Attribute struct {
	DataType string `json:"t"`
	Value    string `json:"v"`
}

// newEntry checks job and makes the entry for queueURL.
func newEntry(queueURL string, job producer.Job, now time.Time) (Entry, error) {
	var errs []error
	if queueURL == "" {
		errs = append(errs, errors.New("outbox: empty queue URL"))
	}
	fifo := sqsinfo.IsFIFOName(queueURL)
	if job.UniqueKey != "" || job.DeduplicationID != "" {
		errs = append(errs, errors.New("outbox: Job.UniqueKey and Job.DeduplicationID are not supported: the entry's id is the deduplication id"))
	}
	if fifo && job.GroupID == "" {
		errs = append(errs, fmt.Errorf("outbox: queue %s is FIFO and the job has no GroupID (SQS requires a message group id)", queueURL))
	}
	if fifo && job.Delay > 0 {
		errs = append(errs, fmt.Errorf("outbox: queue %s is FIFO, and FIFO queues take no per-message delay", queueURL))
	}
	if job.Delay < 0 || job.Delay > MaxDelay {
		errs = append(errs, fmt.Errorf("outbox: job delay %s is outside 0 to %s (outbox.MaxDelay)", job.Delay, MaxDelay))
	}
	body, err := jobBody(job)
	if err != nil {
		errs = append(errs, err)
	}
	attributes := make(map[string]Attribute, len(job.Attributes))
	for name, value := range job.Attributes {
		dataType := aws.ToString(value.DataType)
		if value.StringValue == nil || !(strings.HasPrefix(dataType, "String") || strings.HasPrefix(dataType, "Number")) {
			errs = append(errs, fmt.Errorf("outbox: message attribute %q: only String and Number attributes can be stored in an outbox", name))
			continue
		}
		attributes[name] = Attribute{DataType: dataType, Value: *value.StringValue}
	}
	if err := errors.Join(errs...); err != nil {
		return Entry{}, err
	}
	id := newID(now)
	key := job.IdempotencyKey
	if key == "" {
		key = id
	}
	return Entry{
		ID: id, QueueURL: queueURL, Type: job.Type, Body: body, GroupID: job.GroupID,
		IdempotencyKey: key, Delay: job.Delay.Round(time.Second), Attributes: attributes,
		CreatedAt: now.Truncate(time.Millisecond),
	}, nil
}

// job returns the producer job that publishes e.
func (e Entry) job() producer.Job {
	attributes := make(map[string]types.MessageAttributeValue, len(e.Attributes)+1)
	for name, value := range e.Attributes {
		attributes[name] = types.MessageAttributeValue{DataType: aws.String(value.DataType), StringValue: aws.String(value.Value)}
	}
	attributes[AttributeOutboxID] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(e.ID)}
	job := producer.Job{
		Type: e.Type, Body: e.Body, GroupID: e.GroupID, IdempotencyKey: e.IdempotencyKey,
		Delay: e.Delay, Attributes: attributes,
	}
	if sqsinfo.IsFIFOName(e.QueueURL) {
		job.DeduplicationID = e.ID
	}
	return job
}

// newID returns a time-ordered random id: 12 hex digits of Unix milliseconds, then 80
// random bits.
func newID(now time.Time) string {
	random := make([]byte, 10)
	_, _ = rand.Read(random) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%012x%s", now.UnixMilli(), hex.EncodeToString(random))
}

// jobBody returns the body of a job: its raw Body or its JSON-encoded Payload.
func jobBody(job producer.Job) (string, error) {
	switch {
	case job.Payload != nil && job.Body != "":
		return "", errors.New("outbox: the job sets both Payload and Body")
	case job.Body != "":
		return job.Body, nil
	case job.Payload == nil:
		return "", errors.New("outbox: the job has neither Payload nor Body (SQS takes no empty body)")
	}
	encoded, err := json.Marshal(job.Payload)
	if err != nil {
		return "", fmt.Errorf("outbox: encoding the %q job's payload: %w", job.Type, err)
	}
	return string(encoded), nil
}
