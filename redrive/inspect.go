package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/envelope"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Defaults for [PeekOptions].
const (
	defaultPeekMessages   = 10
	defaultPeekVisibility = 30 * time.Second
	// defaultRetention is SQS's default MessageRetentionPeriod (4 days).
	defaultRetention = 4 * 24 * time.Hour
)

// MaxPeekVisibility is the longest PeekOptions.VisibilityTimeout [Peek] accepts. A peek
// releases every message it saw before it returns, so the visibility timeout matters only
// when that release does not happen (the process is killed): the messages then stay
// hidden from the workers that long. SQS itself allows up to 12 hours.
const MaxPeekVisibility = 15 * time.Minute

// ErrInvalidPeekOptions is returned (wrapped, with the value and its bounds) by [Peek]
// for options it refuses, before any SQS call.
var ErrInvalidPeekOptions = errors.New("redrive: invalid peek options")

// ErrPeekNeedsForce is returned (wrapped, with the policy explained) by [Peek] for a
// queue that has a redrive policy when PeekOptions.Force is false.
var ErrPeekNeedsForce = errors.New("redrive: peeking a queue with a redrive policy needs Force")

// PeekOptions are the optional parameters of [Peek]. Zero values take the defaults noted.
type PeekOptions struct {
	// MaxMessages specifies how many messages to look at, at most; if zero, 10.
	MaxMessages int
	// Force allows peeking a queue that has a redrive policy. SQS has no read-only peek:
	// looking at a message receives it, and every receive counts toward the policy's
	// maxReceiveCount, so a peek can push a message into the dead-letter queue sooner.
	Force bool
	// VisibilityTimeout specifies how long each message seen stays hidden during the
	// peek, so that it is seen once; every message is released (visibility 0) before Peek
	// returns. Whole seconds (rounded up) from 1 s to [MaxPeekVisibility]; if zero, 30 s.
	VisibilityTimeout time.Duration
	// WaitTime specifies each ReceiveMessage's long-poll wait (whole seconds, up to 20);
	// if zero, 1 s. The peek ends at the first receive that returns nothing new while
	// SQS counts no visible message in the queue (or, while it still counts some, after
	// three such receives in a row, or Patience).
	WaitTime time.Duration
	// Patience specifies how long the peek goes on receiving while SQS counts visible
	// messages that no receive returns (an emulator under load does that); if zero, it
	// gives up after three such receives. A harness that must see every message sets it.
	Patience time.Duration
}

// Validate reports options Peek refuses, as an error matching [ErrInvalidPeekOptions]:
// a VisibilityTimeout other than zero (the default) outside 1 s to [MaxPeekVisibility].
// ReceiveMessage cannot carry a visibility of 0 (the SDK leaves zero out and the queue's
// default applies), so the least is 1 s.
func (o PeekOptions) Validate() error {
	if o.VisibilityTimeout != 0 && (o.VisibilityTimeout < time.Second || o.VisibilityTimeout > MaxPeekVisibility) {
		return fmt.Errorf("%w: visibility timeout %s is outside 1s to %s (a peek releases what it saw at the end; "+
			"the visibility timeout is how long the messages stay hidden if it is killed before that)",
			ErrInvalidPeekOptions, o.VisibilityTimeout, MaxPeekVisibility)
	}
	return nil
}

// DeadLetter is one message seen by [Peek], with what the hosts recorded about its
// failure.
type DeadLetter struct {
	// ID is the SQS message id.
	ID string `json:"id"`
	// Body is the message body.
	Body string `json:"body"`
	// Size is the message's size as SQS counts it (body plus each attribute's name, type and value), in bytes.
	Size int `json:"size"`
	// FailureReason is the failure-reason attribute ("" when the message reached the
	// dead-letter queue through the redrive policy, after maxReceiveCount receives).
	FailureReason string `json:"failure_reason,omitempty"`
	// FailureError is the failure-error attribute: the handler's error text.
	FailureError string `json:"failure_error,omitempty"`
	// SourceQueue is the failure-source-queue attribute, or else SQS's
	// DeadLetterQueueSourceArn: the queue the message failed in.
	SourceQueue string `json:"source_queue,omitempty"`
	// FailedReceiveCount is the failure-receive-count attribute: the receive count of the
	// delivery that failed (0 when absent).
	FailedReceiveCount int `json:"failed_receive_count,omitempty"`
	// ReceiveCount is SQS's ApproximateReceiveCount, this peek's receive included.
	ReceiveCount int `json:"receive_count"`
	// SentAt is SentTimestamp: when the message was first sent. A standard queue keeps
	// it when the redrive policy moves the message to the dead-letter queue.
	SentAt time.Time `json:"sent_at"`
	// ExpiresAt is when SQS deletes the message: SentAt plus the queue's retention
	// period. When ExpiryExact is false (a FIFO dead-letter queue, which resets the
	// enqueue time when it receives a message through the redrive policy), the message
	// expires a retention period after it was moved, and ExpiresAt is the earliest that
	// can be.
	ExpiresAt time.Time `json:"expires_at"`
	// ExpiryExact reports whether ExpiresAt is exact.
	ExpiryExact bool `json:"expiry_exact"`
	// ExpiryBasis names the time ExpiresAt counts from: [ExpiryBasisOriginalEnqueue],
	// [ExpiryBasisDeadLetterSend] or [ExpiryBasisFIFOMove] ("" when SentAt is unknown).
	ExpiryBasis string `json:"expiry_basis,omitempty"`
	// GroupID and DeduplicationID are the FIFO message group and deduplication ids.
	GroupID         string `json:"group_id,omitempty"`
	DeduplicationID string `json:"deduplication_id,omitempty"`
	// MessageAttributes are the message's attributes, failure attributes included.
	MessageAttributes map[string]sqsworker.MessageAttribute `json:"message_attributes,omitempty"`
	// Encrypted reports that the body is a package encrypt ciphertext (the message has
	// the [sqsworker.AttributeEncryption] attribute), and EncryptionKey the ARN of the
	// KMS key its envelope names ("" when the envelope is malformed).
	// EncryptedFields are the encrypted fields of a field-level envelope (the rest of
	// the JSON body is in clear); empty when the whole body is encrypted.
	Encrypted       bool     `json:"encrypted,omitempty"`
	EncryptionKey   string   `json:"encryption_key,omitempty"`
	EncryptedFields []string `json:"encrypted_fields,omitempty"`
	// Decrypted reports that a tool replaced Body with its plaintext (`sqsworker dlq
	// peek --decrypt`); Peek never does.
	Decrypted bool `json:"decrypted,omitempty"`
}

// PeekResult is what [Peek] saw.
type PeekResult struct {
	// QueueURL is the queue looked at.
	QueueURL string `json:"queue_url"`
	// FIFO is true for a FIFO queue.
	FIFO bool `json:"fifo"`
	// Retention is the queue's MessageRetentionPeriod. In JSON it is
	// "retention_seconds", whole seconds (see MarshalJSON).
	Retention time.Duration `json:"-"`
	// RedrivePolicy is the queue's own redrive policy, nil for most dead-letter queues.
	RedrivePolicy *RedrivePolicy `json:"redrive_policy,omitempty"`
	// Messages are the distinct messages seen, in the order received.
	Messages []DeadLetter `json:"messages"`
	// ReceivesUsed counts the deliveries the peek took: each added one to a message's
	// ApproximateReceiveCount.
	ReceivesUsed int `json:"receives_used"`
	// Released counts the messages made visible again at the end.
	Released int `json:"released"`
}

// MarshalJSON encodes the result with Retention as "retention_seconds" in whole
// seconds, as SQS's MessageRetentionPeriod is.
func (r PeekResult) MarshalJSON() ([]byte, error) {
	type plain PeekResult
	return json.Marshal(struct {
		plain
		RetentionSeconds int64 `json:"retention_seconds"`
	}{plain(r), int64(r.Retention / time.Second)})
}

// The bases of [DeadLetter.ExpiresAt], after the AWS rule in "Setting-up dead-letter
// queue retention in Amazon SQS" (SQS Developer Guide): a standard queue keeps a
// message's original enqueue timestamp when the redrive policy moves it to the
// dead-letter queue; a FIFO queue resets it on that move.
const (
	// ExpiryBasisOriginalEnqueue: a standard dead-letter queue, the message moved by the
	// redrive policy; it expires at its original SentTimestamp + the DLQ's retention.
	ExpiryBasisOriginalEnqueue = "original enqueue time (standard queue)"
	// ExpiryBasisDeadLetterSend: a message a host sent to the dead-letter queue itself
	// (it has a failure-reason): a new message, so SentTimestamp is when it entered the
	// DLQ, on standard and FIFO queues alike.
	ExpiryBasisDeadLetterSend = "dead-letter send time (sent by the worker)"
	// ExpiryBasisFIFOMove: a FIFO dead-letter queue, the message moved by the redrive
	// policy: it expires a retention period after the move, a time SQS does not report;
	// ExpiresAt (SentTimestamp + retention) is the earliest it can be.
	ExpiryBasisFIFOMove = "move to the FIFO dead-letter queue (time not reported; earliest shown)"
)

// Peek looks at up to MaxMessages messages of the queue at queueURL without deleting
// them: it receives them (hidden for VisibilityTimeout so each is seen once), then
// releases them all with visibility 0, also when ctx is cancelled.
//
// Receiving counts against a redrive policy, so a queue that has one is refused with
// [ErrPeekNeedsForce] unless options.Force is set. Errors: [ErrInvalidPeekOptions],
// [ErrQueueNotFound], a failed ReceiveMessage; a failed release is returned with the
// result.
func Peek(ctx context.Context, api InspectAPI, queueURL string, options PeekOptions) (result *PeekResult, err error) {
	if options.MaxMessages <= 0 {
		options.MaxMessages = defaultPeekMessages
	}
	if options.VisibilityTimeout == 0 {
		options.VisibilityTimeout = defaultPeekVisibility
	}
	if err := options.Validate(); err != nil {
		return nil, err
	}
	if options.WaitTime <= 0 {
		options.WaitTime = defaultWaitTime
	}
	queue, err := loadQueue(ctx, api, queueURL)
	if err != nil {
		return nil, err
	}
	result = &PeekResult{QueueURL: queueURL, FIFO: queue.FIFO, RedrivePolicy: redrivePolicyOf(queue), Retention: defaultRetention}
	if policy := queue.RedrivePolicy; policy != nil && !options.Force {
		return nil, fmt.Errorf("%w: queue %s has a redrive policy (maxReceiveCount %d, dead-letter queue %s); looking at a message "+
			"receives it and every receive counts toward maxReceiveCount, so a message at %d receives would move to the dead-letter "+
			"queue on the next one; peek with force (--force) to accept that, or peek the dead-letter queue instead",
			ErrPeekNeedsForce, queueURL, policy.MaxReceiveCount, policy.DeadLetterTargetARN, policy.MaxReceiveCount-1)
	}
	if retention, err := retentionOf(ctx, api, queueURL); err != nil {
		return nil, err
	} else if retention > 0 {
		result.Retention = retention
	}
	handles := map[string]string{}
	var order []string
	defer func() {
		if len(order) == 0 {
			return
		}
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		list := make([]string, len(order))
		for i, id := range order {
			list[i] = handles[id]
		}
		failed, releaseErr := releaseMessages(releaseCtx, api, queueURL, list)
		result.Released = len(list) - failed
		if failed > 0 && err == nil {
			err = fmt.Errorf("redrive: %d of %d peeked messages could not be released and stay hidden for up to %s: %v",
				failed, len(list), options.VisibilityTimeout, releaseErr)
		}
	}()
	now := time.Now()
	empty, emptySince := 0, time.Time{}
	for len(result.Messages) < options.MaxMessages {
		count := max(1, min(sqsinfo.MaxBatchEntries, options.MaxMessages-len(result.Messages)))
		output, receiveErr := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         int32(count),
			VisibilityTimeout:           sqsx.VisibilitySeconds(options.VisibilityTimeout),
			WaitTimeSeconds:             sqsx.WaitSeconds(options.WaitTime),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if receiveErr != nil {
			return result, fmt.Errorf("redrive: receiving from %s: %w", queueURL, receiveErr)
		}
		fresh := 0
		for _, raw := range output.Messages {
			result.ReceivesUsed++
			id := aws.ToString(raw.MessageId)
			if _, seen := handles[id]; seen {
				handles[id] = aws.ToString(raw.ReceiptHandle)
				continue
			}
			handles[id] = aws.ToString(raw.ReceiptHandle)
			order = append(order, id)
			fresh++
			result.Messages = append(result.Messages, deadLetterOf(convertMessage(queueURL, raw), queue.FIFO, result.Retention, now))
		}
		if fresh > 0 {
			empty = 0
			continue
		}
		// An empty answer can be false (seen on the emulator under load; short polls
		// on AWS): believe it only when SQS also counts no visible message, or after
		// maxEmptyReceives of them in a row.
		depth, depthErr := sqsinfo.QueueDepth(ctx, api, queueURL)
		if depthErr != nil {
			return result, prefix(depthErr)
		}
		if empty == 0 {
			emptySince = time.Now()
		}
		empty++
		if depth.Visible == 0 || (options.Patience == 0 && empty >= maxEmptyReceives) ||
			(options.Patience > 0 && time.Since(emptySince) >= options.Patience) {
			break
		}
	}
	return result, nil
}

func retentionOf(ctx context.Context, api InspectAPI, queueURL string) (time.Duration, error) {
	output, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMessageRetentionPeriod},
	})
	if err != nil {
		return 0, queueError(queueURL, err)
	}
	seconds, err := strconv.Atoi(output.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	if err != nil {
		return 0, nil
	}
	return time.Duration(seconds) * time.Second, nil
}

func deadLetterOf(message *sqsworker.Message, fifo bool, retention time.Duration, now time.Time) DeadLetter {
	letter := DeadLetter{
		ID:                message.ID,
		Body:              message.Body,
		Size:              sqsx.MessageSize(message),
		ReceiveCount:      message.ReceiveCount,
		SentAt:            message.SentAt,
		GroupID:           message.GroupID,
		DeduplicationID:   message.DeduplicationID,
		MessageAttributes: message.MessageAttributes,
	}
	if value, ok := message.StringAttribute(sqsworker.AttributeEncryption); ok {
		letter.Encrypted = true
		if header, err := envelope.ParseHeader(value); err == nil {
			letter.EncryptionKey, letter.EncryptedFields = header.KeyARN, header.Fields
		}
	}
	letter.FailureReason, _ = message.StringAttribute(sqsworker.AttributeFailureReason)
	letter.FailureError, _ = message.StringAttribute(sqsworker.AttributeFailureError)
	letter.SourceQueue, _ = message.StringAttribute(sqsworker.AttributeFailureSourceQueue)
	if letter.SourceQueue == "" {
		letter.SourceQueue = message.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	}
	if text, ok := message.StringAttribute(sqsworker.AttributeFailureReceiveCount); ok {
		letter.FailedReceiveCount, _ = strconv.Atoi(text)
	}
	if !message.SentAt.IsZero() {
		letter.ExpiresAt = message.SentAt.Add(retention)
		// A host's SendToDeadLetterQueue makes a new message, so its SentAt is when it
		// entered this queue; a standard queue keeps the original enqueue time.
		letter.ExpiryExact = !fifo || letter.FailureReason != ""
		switch {
		case letter.FailureReason != "":
			letter.ExpiryBasis = ExpiryBasisDeadLetterSend
		case fifo:
			letter.ExpiryBasis = ExpiryBasisFIFOMove
		default:
			letter.ExpiryBasis = ExpiryBasisOriginalEnqueue
		}
	} else {
		letter.ExpiresAt = now.Add(retention)
	}
	return letter
}

// RedrivePolicy is a queue's RedrivePolicy attribute: after MaxReceiveCount receives
// without a delete, SQS moves the message to the dead-letter queue DeadLetterTargetARN.
type RedrivePolicy struct {
	DeadLetterTargetARN string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

func redrivePolicyOf(queue *sqsinfo.Queue) *RedrivePolicy {
	if queue.RedrivePolicy == nil {
		return nil
	}
	return &RedrivePolicy{DeadLetterTargetARN: queue.RedrivePolicy.DeadLetterTargetARN, MaxReceiveCount: queue.RedrivePolicy.MaxReceiveCount}
}
