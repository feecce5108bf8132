package settle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// ErrDeadLetterAttributes is returned by [SendToDeadLetterQueue] when the message already
// carries so many message attributes that the failure attributes would exceed SQS's
// limit. The host then leaves the message to the redrive policy (ordinary retry), so it
// still reaches the dead-letter queue, without the failure attributes.
var ErrDeadLetterAttributes = fmt.Errorf("settle: message has too many attributes to add the failure attributes (SQS allows %d)", sqsx.MaxMessageAttributes)

// SendAPI is the part of the SQS client that [SendToDeadLetterQueue] uses.
type SendAPI interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ SendAPI = (*sqs.Client)(nil)

// SendToDeadLetterQueue sends message, body and message attributes unchanged, to the
// queue's dead-letter queue, adding the failure attributes (reason, truncated error text,
// source queue, receive count) from outcome. On a FIFO dead-letter queue it keeps the
// message group and uses the message id as deduplication id, so a repeated send after a
// crash is deduplicated. The caller deletes the message from the source queue only after
// this returns nil.
//
// Errors: queue has no dead-letter queue; [ErrDeadLetterAttributes]; SendMessage's error.
func SendToDeadLetterQueue(ctx context.Context, api SendAPI, queue *sqsx.Queue, message *sqsworker.Message, outcome sqsworker.Outcome) error {
	if queue == nil || queue.DeadLetterQueueURL == "" {
		url := ""
		if queue != nil {
			url = queue.URL
		}
		return fmt.Errorf("settle: queue %s has no dead-letter queue (no redrive policy)", url)
	}
	attributes := sqsx.ToSDKAttributes(message.MessageAttributes)
	if attributes == nil {
		attributes = make(map[string]types.MessageAttributeValue, 4)
	}
	errorText := ""
	if outcome.Err != nil {
		errorText = truncateUTF8(outcome.Err.Error(), sqsworker.MaxFailureErrorBytes)
	}
	source := queue.ARN
	if source == "" {
		source = queue.URL
	}
	failure := map[string]types.MessageAttributeValue{
		sqsworker.AttributeFailureReason:       stringAttribute(outcome.Reason),
		sqsworker.AttributeFailureError:        stringAttribute(errorText),
		sqsworker.AttributeFailureSourceQueue:  stringAttribute(source),
		sqsworker.AttributeFailureReceiveCount: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(message.ReceiveCount))},
	}
	for name, value := range failure {
		if value.StringValue != nil && *value.StringValue == "" {
			continue // SQS rejects empty attribute values.
		}
		attributes[name] = value
	}
	if len(attributes) > sqsx.MaxMessageAttributes {
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
		return fmt.Errorf("settle: sending message %s to dead-letter queue %s: %w", message.ID, queue.DeadLetterQueueURL, err)
	}
	return nil
}

func stringAttribute(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
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

// errNoDeadLetter is the reason a dead-letter outcome is retried when the send is off.
var errNoDeadLetter = errors.New("settle: the dead-letter send is disabled; the redrive policy will move the message")
