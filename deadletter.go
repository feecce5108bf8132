package sqsworker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message attributes a host adds when it sends a message to the dead-letter queue for a
// permanent failure. The redrive tooling reads them back.
const (
	// AttributeFailureReason holds the Outcome's Reason, for example "MalformedBody".
	AttributeFailureReason = "failure-reason"
	// AttributeFailureError holds the handler's error text, truncated to MaxFailureErrorBytes.
	AttributeFailureError = "failure-error"
	// AttributeFailureSourceQueue holds the ARN (or, if unknown, URL) of the source queue.
	AttributeFailureSourceQueue = "failure-source-queue"
	// AttributeFailureReceiveCount holds the receive count of the failed delivery (Number).
	AttributeFailureReceiveCount = "failure-receive-count"
)

// MaxFailureErrorBytes bounds the failure-error attribute; longer texts are cut at a
// UTF-8 boundary and end in "...".
const MaxFailureErrorBytes = 1024

// maxMessageAttributes is SQS's limit of message attributes per message.
const maxMessageAttributes = 10

// ErrDeadLetterAttributes is returned by [SendToDeadLetterQueue] when the message already
// carries so many message attributes that the failure attributes would exceed SQS's
// limit of 10. The host then leaves the message to the redrive policy (ordinary retry),
// so it still reaches the dead-letter queue, without the failure attributes.
var ErrDeadLetterAttributes = errors.New("sqsworker: message has too many attributes to add the failure attributes (SQS allows 10)")

// DeadLetterAPI is the part of the SQS client that [SendToDeadLetterQueue] uses.
type DeadLetterAPI interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ DeadLetterAPI = (*sqs.Client)(nil)

// SendToDeadLetterQueue sends message, body and message attributes unchanged, to the
// queue's dead-letter queue, adding the failure attributes (reason, truncated error text,
// source queue, receive count) from outcome. On a FIFO dead-letter queue it keeps the
// message group and uses the message id as deduplication id, so a repeated send after a
// crash is deduplicated. The caller deletes the message from the source queue only after
// this returns nil.
//
// Errors: queue has no dead-letter queue; [ErrDeadLetterAttributes]; SendMessage's error.
func SendToDeadLetterQueue(ctx context.Context, api DeadLetterAPI, queue *Queue, message *Message, outcome Outcome) error {
	if queue.DeadLetterQueueURL == "" {
		return fmt.Errorf("sqsworker: queue %s has no dead-letter queue (no redrive policy)", queue.URL)
	}
	attributes := make(map[string]types.MessageAttributeValue, len(message.MessageAttributes)+4)
	for name, value := range message.MessageAttributes {
		attributes[name] = toSDKAttribute(value)
	}
	errorText := ""
	if outcome.Err != nil {
		errorText = truncateUTF8(outcome.Err.Error(), MaxFailureErrorBytes)
	}
	source := queue.ARN
	if source == "" {
		source = queue.URL
	}
	failure := map[string]types.MessageAttributeValue{
		AttributeFailureReason:       stringAttribute(outcome.Reason),
		AttributeFailureError:        stringAttribute(errorText),
		AttributeFailureSourceQueue:  stringAttribute(source),
		AttributeFailureReceiveCount: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(message.ReceiveCount))},
	}
	for name, value := range failure {
		if value.StringValue != nil && *value.StringValue == "" {
			continue // SQS rejects empty attribute values.
		}
		attributes[name] = value
	}
	if len(attributes) > maxMessageAttributes {
		return ErrDeadLetterAttributes
	}
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
	if _, err := api.SendMessage(ctx, input); err != nil {
		return fmt.Errorf("sqsworker: sending message %s to dead-letter queue %s: %w", message.ID, queue.DeadLetterQueueURL, err)
	}
	return nil
}

func stringAttribute(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

func toSDKAttribute(value MessageAttribute) types.MessageAttributeValue {
	attribute := types.MessageAttributeValue{DataType: aws.String(value.DataType), BinaryValue: value.BinaryValue}
	if value.BinaryValue == nil {
		attribute.StringValue = aws.String(value.StringValue)
	}
	return attribute
}

// truncateUTF8 cuts text to at most limit bytes at a rune boundary, ending in "...".
func truncateUTF8(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "..."
}
