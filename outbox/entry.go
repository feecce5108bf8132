package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// Type is the job type (empty for a plain message), read from Job.
	Type string
	// GroupID is the message group id (FIFO queues: the order unit), read from Job.
	GroupID string
	// Job is the job the relay sends, checked and encoded by [producer.Prepare] when the
	// entry was written, with the entry's id as its [AttributeOutboxID] attribute, as its
	// idempotency key unless the job named its own, and on FIFO queues as its
	// deduplication id unless the job set DeduplicationID or UniqueKey. The stores keep
	// its JSON form as it is.
	Job producer.Prepared
	// CreatedAt is when the entry was made (the writer's clock, millisecond precision).
	CreatedAt time.Time
	// Attempts is the number of sends that failed so far (0 for an entry never tried, or
	// one retried by its store's Retry, say outboxpg.Outbox.Retry). An attempt is counted when
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

// Ordered reports whether e's message group must be published in order: its queue is
// FIFO and it has a group. A failed ordered entry parks its group.
func (e Entry) Ordered() bool { return e.GroupID != "" && sqsinfo.IsFIFOName(e.QueueURL) }

// ParkedGroup is a FIFO message group whose earliest unpublished entry failed: no
// later entry of the group is sent (SQS would deliver them out of order otherwise)
// until that entry is retried (outboxdynamo.Outbox.Retry, outboxpg.Outbox.Retry) or
// skipped (outboxdynamo.Outbox.Skip, outboxpg.Outbox.Skip). Other groups go on.
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

// NewEntry prepares job for queueURL and makes its entry, created at now (truncated to
// the millisecond), with a new id (see [Entry.ID]). The entry's id becomes the job's
// [AttributeOutboxID] attribute, its idempotency key unless the job names its own, and
// on a FIFO queue its deduplication id unless the job sets DeduplicationID or
// UniqueKey. It returns [producer.Prepare]'s error for a job the producer would refuse
// (a FIFO job without GroupID, both or neither of Payload and Body...). A store calls it
// in its write path (the transaction that commits the entry with the business data),
// then keeps the entry's fields and [Entry.EncodeJob]'s text.
func NewEntry(queueURL string, job producer.Job, now time.Time) (Entry, error) {
	id := newID(now)
	if job.IdempotencyKey == "" {
		job.IdempotencyKey = id
	}
	if sqsinfo.IsFIFOName(queueURL) && job.DeduplicationID == "" && job.UniqueKey == "" {
		job.DeduplicationID = id
	}
	attributes := make(map[string]types.MessageAttributeValue, len(job.Attributes)+1)
	maps.Copy(attributes, job.Attributes)
	attributes[AttributeOutboxID] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(id)}
	job.Attributes = attributes
	prepared, err := producer.Prepare(queueURL, job)
	if err != nil {
		return Entry{}, err
	}
	return Entry{
		ID: id, QueueURL: queueURL, Type: prepared.Type(), GroupID: prepared.GroupID,
		Job: prepared, CreatedAt: now.Truncate(time.Millisecond),
	}, nil
}

// EncodeJob returns the stored form of e's job: its versioned JSON form
// ([producer.Prepared]'s), which a store keeps as it is (one column or attribute) and
// gives back to [Entry.DecodeJob].
func (e Entry) EncodeJob() (string, error) {
	encoded, err := json.Marshal(e.Job)
	if err != nil {
		return "", fmt.Errorf("outbox: encoding the job: %w", err)
	}
	return string(encoded), nil
}

// DecodeJob reads e's job from its stored form ([Entry.EncodeJob]'s text; present
// false when the store has none) and fills Job, Type and GroupID from it; e.ID and
// e.QueueURL must be set first. It returns an error wrapping [ErrDamaged] when the
// stored form is missing, is not a prepared job, or names another queue than
// e.QueueURL: the store returns such an entry in its claim with the error as
// [Claimed.Damage]. (An entry without a stored job was written by an outbox of an
// earlier version, which stored the job's parts apart: drain the outbox with that
// version before upgrading.)
func (e *Entry) DecodeJob(stored string, present bool) error {
	if !present {
		return fmt.Errorf("%w: entry %s has no stored job (written by an outbox before version 1 of the prepared form: drain the outbox with the earlier release before upgrading)", ErrDamaged, e.ID)
	}
	var job producer.Prepared
	if err := job.UnmarshalJSON([]byte(stored)); err != nil {
		return fmt.Errorf("%w: entry %s: %w", ErrDamaged, e.ID, err)
	}
	if job.QueueURL != e.QueueURL {
		return fmt.Errorf("%w: entry %s is stored for %s, its job for %s", ErrDamaged, e.ID, e.QueueURL, job.QueueURL)
	}
	e.Job, e.Type, e.GroupID = job, job.Type(), job.GroupID
	return nil
}

// MaxErrorText is the most bytes of an error's text a store keeps for an entry's
// LastError and FailureReason ([ErrorText]).
const MaxErrorText = 4000

// ErrorText returns the text a store keeps for err (a verdict's Err): its first
// MaxErrorText bytes.
func ErrorText(err error) string {
	text := err.Error()
	if len(text) > MaxErrorText {
		return text[:MaxErrorText]
	}
	return text
}

// newID returns a time-ordered random id: 12 hex digits of Unix milliseconds, then 80
// random bits.
func newID(now time.Time) string {
	random := make([]byte, 10)
	_, _ = rand.Read(random) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%012x%s", now.UnixMilli(), hex.EncodeToString(random))
}
