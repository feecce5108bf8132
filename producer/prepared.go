package producer

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// Prepared is a job checked and encoded for one queue: what [Producer.SendPrepared]
// sends. [Prepare] makes it from a [Job] without calling any service, so it can be made
// where no SQS call belongs (inside a database transaction, say) and sent later, by
// another process: its JSON form ([Prepared.MarshalJSON]) is stable and versioned, and
// package outbox stores it as it is.
//
// What depends on the sending [Producer] and the time of the send is decided at the
// send, by the same code as [Producer.Send]: the trace context (Config.TraceContext),
// the due-time horizon and the delay hops (Config.DueAtHorizon, Config.MaxHop, the due
// time counted from the send), the queue's MaximumMessageSize and the claim check
// (Config.PayloadStore), and the unique key's reservation (Config.Unique).
//
// The fields may be read; a Prepared changed by hand is checked again by
// [Producer.SendPrepared] with the checks of [Prepare].
type Prepared struct {
	// QueueURL is the queue the job goes to.
	QueueURL string
	// Body is the message body: the job's Body or its JSON-encoded Payload.
	Body string
	// Attributes are the message attributes: the job's own, its id
	// ([sqsworker.AttributeJobID]), type ([sqsworker.AttributeJobType]) and idempotency
	// key ([sqsworker.AttributeIdempotencyKey]). The id is here, so the outbox, the
	// scheduler and every later send of this Prepared carry the same one.
	Attributes map[string]types.MessageAttributeValue
	// GroupID is the message group id (see Job.GroupID).
	GroupID string
	// DeduplicationID is the FIFO deduplication id: Job.DeduplicationID, or on a FIFO
	// queue Job.UniqueKey when that is empty.
	DeduplicationID string
	// Delay is Job.Delay, counted from the send.
	Delay time.Duration
	// UniqueKey, UniqueFor and UniqueMode are the job's unique settings (standard
	// queues; see Job.UniqueKey). UniqueFor zero means DefaultUniqueFor.
	UniqueKey  string
	UniqueFor  time.Duration
	UniqueMode UniqueMode
}

// Prepare checks job for queueURL and encodes it, with no service call. Its errors are
// those of [Producer.Send] that depend on the job and the queue alone: both or neither of
// Payload and Body, a payload that does not encode, a negative delay, FIFO rules
// (GroupID required, no delay, DeduplicationID on FIFO queues only), invalid unique
// settings, an invalid Job.ID, more than 10 attributes (with the job id, the job type
// and the idempotency key). It gives the job its id (Job.ID, or a new [NewJobID]).
func Prepare(queueURL string, job Job) (Prepared, error) {
	body, err := jobBody(job)
	if err != nil {
		return Prepared{}, err
	}
	id, err := jobID(job)
	if err != nil {
		return Prepared{}, err
	}
	attributes := make(map[string]types.MessageAttributeValue, len(job.Attributes)+3)
	maps.Copy(attributes, job.Attributes)
	attributes[sqsworker.AttributeJobID] = stringValue(id)
	if job.Type != "" {
		attributes[sqsworker.AttributeJobType] = stringValue(job.Type)
	}
	if job.IdempotencyKey != "" {
		attributes[sqsworker.AttributeIdempotencyKey] = stringValue(job.IdempotencyKey)
	}
	prepared := Prepared{
		QueueURL: queueURL, Body: body, Attributes: attributes, GroupID: job.GroupID,
		DeduplicationID: job.DeduplicationID, Delay: job.Delay,
		UniqueKey: job.UniqueKey, UniqueFor: job.UniqueFor, UniqueMode: job.UniqueMode,
	}
	if isFIFO(queueURL) && prepared.DeduplicationID == "" {
		prepared.DeduplicationID = job.UniqueKey
	}
	if err := prepared.check(); err != nil {
		return Prepared{}, err
	}
	return prepared, nil
}

// JobID returns the job id the message carries (its [sqsworker.AttributeJobID]), or ""
// for a Prepared not made by [Prepare] (or read from a form written before job ids).
func (m Prepared) JobID() string { return m.stringAttribute(sqsworker.AttributeJobID) }

// Type returns the job type the message carries (its [sqsworker.AttributeJobType]), or "".
func (m Prepared) Type() string { return m.stringAttribute(sqsworker.AttributeJobType) }

// IdempotencyKey returns the idempotency key the message carries (its
// [sqsworker.AttributeIdempotencyKey]), or "".
func (m Prepared) IdempotencyKey() string {
	return m.stringAttribute(sqsworker.AttributeIdempotencyKey)
}

func (m Prepared) stringAttribute(name string) string {
	return aws.ToString(m.Attributes[name].StringValue)
}

// check applies the checks of Prepare that need no Producer.
func (m Prepared) check() error {
	fifo := isFIFO(m.QueueURL)
	switch {
	case m.QueueURL == "":
		return errors.New("producer: empty queue URL")
	case m.Body == "":
		return errors.New("producer: the job has neither Payload nor Body (SQS takes no empty body)")
	case m.Delay < 0:
		return fmt.Errorf("producer: job delay %s is negative", m.Delay)
	case m.Delay > 0 && fifo:
		return fmt.Errorf("producer: queue %s is FIFO, and FIFO queues take no per-message delay (set the queue's DelaySeconds instead)", m.QueueURL)
	case fifo && m.GroupID == "":
		return fmt.Errorf("producer: queue %s is FIFO and the job has no GroupID (SQS requires a message group id)", m.QueueURL)
	case !fifo && m.DeduplicationID != "":
		return fmt.Errorf("producer: queue %s is a standard queue and takes no DeduplicationID (use UniqueKey)", m.QueueURL)
	}
	if err := checkAttributeCount(m.Attributes); err != nil {
		return err
	}
	return m.checkUnique()
}

// checkUnique checks the unique settings: a mode or window needs a key, FIFO queues take
// only UniqueUntilWindowEnds, and the window is at least MinUniqueFor and longer than
// the delay.
func (m Prepared) checkUnique() error {
	switch {
	case m.UniqueKey == "" && (m.UniqueMode != UniqueUntilWindowEnds || m.UniqueFor != 0):
		return errors.New("producer: Job.UniqueMode and Job.UniqueFor need a Job.UniqueKey")
	case m.UniqueKey == "":
		return nil
	case m.UniqueMode < UniqueUntilWindowEnds || m.UniqueMode > UniqueUntilStarted:
		return fmt.Errorf("producer: unknown Job.UniqueMode %d", int(m.UniqueMode))
	case isFIFO(m.QueueURL) && m.UniqueMode != UniqueUntilWindowEnds:
		return fmt.Errorf("producer: queue %s is FIFO: its unique key is the deduplication id, kept for SQS's 5-minute interval; Job.UniqueMode %s needs a standard queue", m.QueueURL, m.UniqueMode)
	case isFIFO(m.QueueURL):
		return nil
	}
	uniqueFor := m.uniqueFor()
	switch {
	case uniqueFor < MinUniqueFor:
		return fmt.Errorf("producer: unique window must be at least 1s (Job.UniqueFor is %s)", uniqueFor)
	case uniqueFor < m.Delay:
		return fmt.Errorf("producer: unique window %s is shorter than the delay %s: the key must outlive the delay, or it is free again before the job runs", uniqueFor, m.Delay)
	case uniqueFor == m.Delay:
		return fmt.Errorf("producer: unique window %s equals the delay %s: the key must outlive the delay, or it is free again when the job runs", uniqueFor, m.Delay)
	}
	return nil
}

// uniqueFor returns the unique window, DefaultUniqueFor when UniqueFor is zero.
func (m Prepared) uniqueFor() time.Duration {
	if m.UniqueFor == 0 {
		return DefaultUniqueFor
	}
	return m.UniqueFor
}

// reserves reports whether sending m reserves its unique key in Config.Unique: a unique
// job on a standard queue.
func (m Prepared) reserves() bool { return m.UniqueKey != "" && !isFIFO(m.QueueURL) }
