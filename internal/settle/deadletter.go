package settle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// MaxFailureErrorBytes bounds the failure-error attribute
// (sqsworker.AttributeFailureError); longer texts are cut at a UTF-8 boundary and end in
// "...".
const MaxFailureErrorBytes = 1024

// minFailureErrorBytes: a failure-error attribute shortened to fit the size limit keeps
// at least this many bytes of text, or is dropped.
const minFailureErrorBytes = 16

// SendAPI is the part of the SQS client that [SendToDeadLetterQueue] uses.
type SendAPI interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ SendAPI = (*sqs.Client)(nil)

// errNoDeadLetter is the reason a dead-letter outcome is retried when the send is off.
var errNoDeadLetter = errors.New("settle: the dead-letter send is disabled; the redrive policy will move the message")

// SendToDeadLetterQueue sends message, body and message attributes unchanged, to the
// queue's dead-letter queue, adding the failure attributes (reason, the message's id in
// the source queue, truncated error text, receive count, source queue) from outcome. On
// a FIFO dead-letter queue it keeps the
// message group and uses the message id as deduplication id, so a repeated send after a
// crash is deduplicated. The caller deletes the message from the source queue only after
// this returns nil.
//
// The copy always fits SQS's limits, so a message at the size limit or with many
// attributes still goes to the dead-letter queue at once (its handler never runs
// again): the failure attributes are added in this order, each only if it still fits
// both the 10-attribute limit and the size limit ([sqsx.MessageSize] against
// Queue.MaximumMessageSize, or [sqsinfo.DefaultMaximumMessageSize] when unknown):
//
//  1. failure-reason, whole or not at all;
//  2. failure-message-id, so the copy joins the logs and traces of its attempts;
//  3. failure-error, shortened to the room left (ending in "...", at least 16 bytes of
//     text) or dropped;
//  4. failure-receive-count;
//  5. failure-source-queue.
//
// If the dead-letter queue still refuses the copy as too large (its MaximumMessageSize
// is below the source queue's), the send is repeated once with no failure attributes.
//
// Errors: queue has no dead-letter queue; SendMessage's error.
func SendToDeadLetterQueue(ctx context.Context, api SendAPI, queue *sqsinfo.Queue, message *sqsworker.Message, outcome sqsworker.Outcome) error {
	if queue == nil || queue.DeadLetterQueueURL == "" {
		url := ""
		if queue != nil {
			url = queue.URL
		}
		return fmt.Errorf("settle: queue %s has no dead-letter queue (no redrive policy)", url)
	}
	original := make(map[string]types.MessageAttributeValue, len(message.MessageAttributes))
	for name, value := range message.MessageAttributes {
		original[name] = sqsx.ToSDKAttribute(value)
	}
	limit := queue.MaximumMessageSize
	if limit <= 0 {
		limit = sqsinfo.DefaultMaximumMessageSize
	}
	attributes := withFailureAttributes(original, limit-sqsx.MessageSize(message), failureAttributes(queue, message, outcome))
	input := &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.DeadLetterQueueURL),
		MessageBody:       aws.String(message.Body),
		MessageAttributes: attributes,
	}
	if queue.DeadLetterQueueFIFO {
		group := message.GroupID
		if group == "" {
			group = message.ID
		}
		input.MessageGroupId = aws.String(group)
		input.MessageDeduplicationId = aws.String(message.ID)
	}
	_, err := api.SendMessage(ctx, input)
	if err != nil && len(attributes) > len(original) && tooLarge(err) {
		input.MessageAttributes = original
		_, err = api.SendMessage(ctx, input)
	}
	if err != nil {
		return fmt.Errorf("settle: sending message %s to dead-letter queue %s: %w", message.ID, queue.DeadLetterQueueURL, err)
	}
	return nil
}

// namedAttribute is one failure attribute, in the order of preference.
type namedAttribute struct {
	name  string
	value types.MessageAttributeValue
}

// failureAttributes returns the failure attributes of outcome, most wanted first.
func failureAttributes(queue *sqsinfo.Queue, message *sqsworker.Message, outcome sqsworker.Outcome) []namedAttribute {
	errorText := ""
	if outcome.Err != nil {
		errorText = TruncateUTF8(outcome.Err.Error(), MaxFailureErrorBytes)
	}
	source := queue.ARN
	if source == "" {
		source = queue.URL
	}
	return []namedAttribute{
		{sqsworker.AttributeFailureReason, stringAttribute(outcome.Reason)},
		{sqsworker.AttributeFailureMessageID, stringAttribute(message.ID)},
		{sqsworker.AttributeFailureError, stringAttribute(errorText)},
		{sqsworker.AttributeFailureReceiveCount, types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(message.ReceiveCount))}},
		{sqsworker.AttributeFailureSourceQueue, stringAttribute(source)},
	}
}

// withFailureAttributes returns original plus those of failure that fit, in order:
// room is how many bytes the message may still grow by. Only failure-error is
// shortened to fit; the others are added whole or not at all.
func withFailureAttributes(original map[string]types.MessageAttributeValue, room int, failure []namedAttribute) map[string]types.MessageAttributeValue {
	attributes := make(map[string]types.MessageAttributeValue, len(original)+len(failure))
	for name, value := range original {
		attributes[name] = value
	}
	for _, attribute := range failure {
		// A failure attribute the message already carries (it failed before and was
		// redriven) is replaced by this failure's, or dropped.
		if old, ok := attributes[attribute.name]; ok {
			room += sqsx.AttributeSize(attribute.name, aws.ToString(old.DataType), aws.ToString(old.StringValue), old.BinaryValue)
			delete(attributes, attribute.name)
		}
	}
	for _, attribute := range failure {
		value := aws.ToString(attribute.value.StringValue)
		if value == "" || len(attributes) >= sqsinfo.MaxMessageAttributes {
			continue // SQS rejects empty attribute values and more than 10 attributes.
		}
		overhead := len(attribute.name) + len(aws.ToString(attribute.value.DataType))
		if overhead+len(value) > room && attribute.name == sqsworker.AttributeFailureError && room-overhead >= minFailureErrorBytes+len("...") {
			value = TruncateUTF8(value, room-overhead)
			attribute.value = stringAttribute(value)
		}
		if overhead+len(value) > room {
			continue
		}
		room -= overhead + len(value)
		attributes[attribute.name] = attribute.value
	}
	return attributes
}

// tooLarge reports whether err is SQS refusing a message over the queue's size limit
// (InvalidParameterValue, "Message must be shorter than N bytes").
func tooLarge(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && strings.HasPrefix(apiErr.ErrorCode(), "InvalidParameterValue") && strings.Contains(apiErr.ErrorMessage(), "shorter than")
}

func stringAttribute(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

// TruncateUTF8 cuts text to at most limit bytes at a rune boundary, ending in "..." (the
// dead-letter copy's failure-error attribute, and a job record's last error).
func TruncateUTF8(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "..."
}
