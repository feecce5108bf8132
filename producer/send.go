package producer

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Send sends one job to queueURL and returns its SQS message id: [Prepare] and
// [Producer.SendPrepared] in one call. The job's id is Job.ID when set (make one with
// [NewJobID] to know it before the send), or a new one ([Prepare] returns it).
//
// Errors: an invalid job (both or neither of Payload and Body, a payload that does not
// encode, a delay that is negative or past Config.DueAtHorizon, FIFO rules, more than 10
// attributes), [*TooLargeError], [*DuplicateJobError]
// for a unique key already taken, the PayloadStore's or the unique store's error, and
// SendMessage's error, each wrapped with the queue.
func (p *Producer) Send(ctx context.Context, queueURL string, job Job) (string, error) {
	out, err := p.prepare(ctx, queueURL, job)
	if err != nil {
		return "", err
	}
	return p.finish(ctx, out, p.sendOne(ctx, out.message))
}

// SendPrepared sends one prepared job to its queue (m.QueueURL) and returns its SQS
// message id, as [Producer.Send] does: it checks m again as [Prepare] does, then adds
// the trace context, sends a delay past Config.MaxHop as hops, offloads a message that
// is too large and reserves the unique key. Its errors are those of Send.
func (p *Producer) SendPrepared(ctx context.Context, m Prepared) (string, error) {
	out, err := p.ready(ctx, m)
	if err != nil {
		return "", err
	}
	return p.finish(ctx, out, p.sendOne(ctx, out.message))
}

// sendOne sends one prepared message with SendMessage.
func (p *Producer) sendOne(ctx context.Context, message *outMessage) sendResult {
	output, err := p.api.SendMessage(ctx, message.input())
	if err != nil {
		return sendResult{err: fmt.Errorf("producer: sending to %s: %w", message.queueURL, err)}
	}
	return sendResult{id: aws.ToString(output.MessageId)}
}

// sendResult is the outcome of sending one message.
type sendResult struct {
	id  string
	err error
}

// outMessage is a job ready for SendMessage or one SendMessageBatch entry.
type outMessage struct {
	queueURL     string
	body         string
	attributes   map[string]types.MessageAttributeValue
	delaySeconds int32
	groupID      string
	dedupID      string
	size         int
	// systemAttributes holds the AWSTraceHeader, when the trace context has one.
	systemAttributes map[string]types.MessageSystemAttributeValue
}

func (m *outMessage) input() *sqs.SendMessageInput {
	input := &sqs.SendMessageInput{
		QueueUrl:          aws.String(m.queueURL),
		MessageBody:       aws.String(m.body),
		MessageAttributes: m.attributes,
		DelaySeconds:      m.delaySeconds,
	}
	if m.systemAttributes != nil {
		input.MessageSystemAttributes = m.systemAttributes
	}
	if m.groupID != "" {
		input.MessageGroupId = aws.String(m.groupID)
	}
	if m.dedupID != "" {
		input.MessageDeduplicationId = aws.String(m.dedupID)
	}
	return input
}

// entry returns the message as a SendMessageBatch entry (sqsx sets its Id): the fields
// of input, so the two never differ.
func (m *outMessage) entry() types.SendMessageBatchRequestEntry {
	input := m.input()
	return types.SendMessageBatchRequestEntry{
		MessageBody:             input.MessageBody,
		MessageAttributes:       input.MessageAttributes,
		MessageSystemAttributes: input.MessageSystemAttributes,
		DelaySeconds:            input.DelaySeconds,
		MessageGroupId:          input.MessageGroupId,
		MessageDeduplicationId:  input.MessageDeduplicationId,
	}
}

// outgoing is a prepared job: its message and, for a unique job, its reservation.
type outgoing struct {
	message     *outMessage
	reservation *reservation
}

// prepare checks and encodes a job for queueURL, then readies it for the send.
func (p *Producer) prepare(ctx context.Context, queueURL string, job Job) (*outgoing, error) {
	job, err := p.withTenant(queueURL, job)
	if err != nil {
		return nil, err
	}
	prepared, err := Prepare(queueURL, job)
	if err != nil {
		return nil, err
	}
	return p.ready(ctx, prepared)
}

// ready checks m, builds its message (measured, offloaded when too large) and reserves
// its unique key.
func (p *Producer) ready(ctx context.Context, m Prepared) (*outgoing, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	r, err := p.uniqueReservation(m)
	if err != nil {
		return nil, err
	}
	message, err := p.build(ctx, m, r)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if err := p.reserve(ctx, r); err != nil {
			return nil, err
		}
	}
	return &outgoing{message: message, reservation: r}, nil
}

// finish completes or releases the job's reservation after its send.
func (p *Producer) finish(ctx context.Context, out *outgoing, result sendResult) (string, error) {
	if out.reservation == nil {
		return result.id, result.err
	}
	if result.err != nil {
		p.release(ctx, out.reservation)
		return "", result.err
	}
	if err := p.confirm(ctx, out.reservation, result.id); err != nil {
		return result.id, err
	}
	return result.id, nil
}

// build turns m into the message to send now: with the trace context of ctx, the
// unique key's release attribute, the delay (or the first hop and the due time) and
// the body offloaded when too large.
func (p *Producer) build(ctx context.Context, m Prepared, r *reservation) (*outMessage, error) {
	message := &outMessage{queueURL: m.QueueURL, body: m.Body, groupID: m.GroupID, dedupID: m.DeduplicationID}
	attributes := make(map[string]types.MessageAttributeValue, len(m.Attributes)+4)
	maps.Copy(attributes, m.Attributes)
	if release, ok := r.releaseAttribute(); ok {
		attributes[AttributeUniqueRelease] = release
	}
	switch {
	case m.Delay > p.config.DueAtHorizon:
		return nil, fmt.Errorf("producer: job delay %s is longer than the due-time horizon of %s (Config.DueAtHorizon)", m.Delay, p.config.DueAtHorizon)
	case m.Delay > p.config.MaxHop:
		attributes[sqsworker.AttributeDueAt] = dueAtValue(p.config.Now().Add(m.Delay))
		message.delaySeconds = sqsx.DelaySeconds(p.config.MaxHop)
	default:
		message.delaySeconds = sqsx.DelaySeconds(m.Delay)
	}
	if p.config.Encrypter != nil {
		attributes[sqsworker.AttributeEncryption] = types.MessageAttributeValue{} // counted below
	}
	if err := checkAttributeCount(attributes); err != nil {
		return nil, err
	}
	if p.config.Encrypter != nil {
		body, envelope, err := p.config.Encrypter.Encrypt(ctx, message.body, attributes)
		if err != nil {
			return nil, fmt.Errorf("producer: encrypting a job for %s: %w", m.QueueURL, err)
		}
		message.body, attributes[sqsworker.AttributeEncryption] = body, envelope
	}
	addTraceContext(message, attributes, p.traceContext(ctx))
	message.attributes = attributes
	if err := p.fit(ctx, message); err != nil {
		return nil, err
	}
	return message, nil
}

// fit checks the message's size against the queue's limit, offloading it when a store
// is configured.
func (p *Producer) fit(ctx context.Context, message *outMessage) error {
	limits, err := p.limits(ctx, message.queueURL)
	if err != nil {
		return err
	}
	message.size = len(message.body) + sqsx.SDKAttributesSize(message.attributes)
	threshold := p.config.OffloadThreshold
	if threshold == 0 || threshold > limits.maxSize {
		threshold = limits.maxSize
	}
	if message.size <= threshold {
		return nil
	}
	if p.config.PayloadStore == nil {
		return &TooLargeError{QueueURL: message.queueURL, Size: message.size, Limit: limits.maxSize}
	}
	body, attributes, err := p.config.PayloadStore.Offload(ctx, message.queueURL, message.body, message.attributes)
	if err != nil {
		return fmt.Errorf("producer: offloading a %d-byte message for %s: %w", message.size, message.queueURL, err)
	}
	message.body, message.attributes = body, attributes
	message.size = len(body) + sqsx.SDKAttributesSize(attributes)
	if message.size > limits.maxSize {
		return &TooLargeError{QueueURL: message.queueURL, Size: message.size, Limit: limits.maxSize, Offloaded: true}
	}
	if len(attributes) > sqsinfo.MaxMessageAttributes {
		return fmt.Errorf("producer: the offloaded message has %d message attributes, SQS allows %d", len(attributes), sqsinfo.MaxMessageAttributes)
	}
	return nil
}
