package sqsworker

import "time"

// Message is one SQS message as a handler sees it, whichever host received it.
//
// The poller fills it from the SDK's types.Message, the Lambda adapter from
// events.SQSMessage; handlers never see which host called them.
type Message struct {
	// ID is the SQS message id (MessageId), unique per message sent.
	ID string
	// Body is the message body as sent (up to the queue's MaximumMessageSize, at most 1 MiB).
	Body string
	// Attributes holds the SQS system attributes by name (for example
	// "ApproximateReceiveCount", "SentTimestamp", "MessageGroupId").
	Attributes map[string]string
	// MessageAttributes holds the sender's message attributes by name (at most 10 per message).
	MessageAttributes map[string]MessageAttribute
	// ReceiveCount is ApproximateReceiveCount: how many times SQS has handed this message
	// out, this delivery included. It starts at 1.
	ReceiveCount int
	// SentAt is when SQS accepted the message (SentTimestamp). Zero if unknown.
	SentAt time.Time
	// FirstReceivedAt is when the message was first received (ApproximateFirstReceiveTimestamp).
	// Zero if unknown.
	FirstReceivedAt time.Time
	// GroupID is the message group id (MessageGroupId): the FIFO group, or on a standard
	// queue the tenant key of SQS fair queues; empty when the sender set none.
	GroupID string
	// DeduplicationID is the FIFO message deduplication id; empty on standard queues.
	DeduplicationID string
	// QueueURL is the URL of the queue the message was received from.
	QueueURL string
	// QueueARN is the ARN of the queue the message was received from.
	QueueARN string
	// Interrupted is how many earlier receives of this message ended interrupted by its
	// host (a shutdown's drain deadline, a Lambda deadline: [ErrInterrupted]) rather than
	// by a failure, as the idempotency middleware recorded them; it sets the field before
	// the handler runs. Zero without that middleware, or when nothing was recorded.
	Interrupted int
	// ReceiptHandle identifies this delivery for DeleteMessage and ChangeMessageVisibility.
	// It changes on every receive.
	ReceiptHandle string
}

// MessageAttribute is one SQS message attribute. DataType is "String", "Number" or
// "Binary", optionally with a custom suffix ("String.json"); String types use
// StringValue, Binary types use BinaryValue.
type MessageAttribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// StringAttribute returns the string value of the message attribute name, and whether
// the message has it.
func (m *Message) StringAttribute(name string) (string, bool) {
	attribute, ok := m.MessageAttributes[name]
	if !ok {
		return "", false
	}
	return attribute.StringValue, true
}

// Attempt returns which attempt at the job this delivery is, from 1: ReceiveCount less
// the receives interrupted by the host (Interrupted), which are no attempts.
// [JobMaxAttempts] and the per-type retry delays ([JobBackoff], [JobRetryDelays]) count
// attempts.
func (m *Message) Attempt() int { return max(m.ReceiveCount-m.Interrupted, 1) }

// SinceFirstReceive returns how long ago the message was first received, or 0 when unknown.
func (m *Message) SinceFirstReceive(now time.Time) time.Duration {
	if m.FirstReceivedAt.IsZero() {
		return 0
	}
	return max(now.Sub(m.FirstReceivedAt), 0)
}
