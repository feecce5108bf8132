package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/producer"
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
	// FailedAt and FailureReason are set on an entry SQS refused.
	FailedAt      time.Time
	FailureReason string
}

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
	fifo := sqsx.IsFIFOName(queueURL)
	if job.UniqueKey != "" || job.DeduplicationID != "" {
		errs = append(errs, errors.New("outbox: Job.UniqueKey and Job.DeduplicationID are not supported: the entry's id is the deduplication id"))
	}
	if fifo && job.GroupID == "" {
		errs = append(errs, fmt.Errorf("outbox: queue %s is FIFO and the job has no GroupID (SQS requires a message group id)", queueURL))
	}
	if fifo && job.Delay > 0 {
		errs = append(errs, fmt.Errorf("outbox: queue %s is FIFO, and FIFO queues take no per-message delay", queueURL))
	}
	if job.Delay < 0 {
		errs = append(errs, fmt.Errorf("outbox: job delay %s is negative", job.Delay))
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
	if sqsx.IsFIFOName(e.QueueURL) {
		job.DeduplicationID = e.ID
	}
	return job
}

// ordered reports whether e's group must be published in order (FIFO queues).
func (e Entry) ordered() bool { return e.GroupID != "" && sqsx.IsFIFOName(e.QueueURL) }

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
