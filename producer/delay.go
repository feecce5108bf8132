package producer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

var _ sqsworker.Hopper = (*Producer)(nil)

// Hop is the send side of a delay longer than one hop, for [sqsworker.DelayMiddleware]:
// it sends message again to its queue, body and attributes (the due time among them)
// unchanged, its group id kept (a fair queue's tenant key), with a delay of remaining but
// at most Config.MaxHop, rounded up to whole seconds. It returns nil only after SQS
// confirmed the send, and an error naming the message otherwise. Each hop leaves one
// info line in Config.Logger ("producer: delayed job re-sent", with the message id, its
// queue, its due time when it has one, the hop's delay and the new message's id).
func (p *Producer) Hop(ctx context.Context, message *sqsworker.Message, remaining time.Duration) error {
	delay := min(remaining, p.config.MaxHop)
	input := &sqs.SendMessageInput{
		QueueUrl:          aws.String(message.QueueURL),
		MessageBody:       aws.String(message.Body),
		MessageAttributes: sqsx.ToSDKAttributes(message.MessageAttributes),
		DelaySeconds:      sqsx.DelaySeconds(delay),
	}
	if message.GroupID != "" {
		input.MessageGroupId = aws.String(message.GroupID) // a fair queue's tenant key
	}
	output, err := p.api.SendMessage(ctx, input)
	if err != nil {
		return fmt.Errorf("producer: re-sending delayed message %s to %s: %w", message.ID, message.QueueURL, err)
	}
	attrs := []slog.Attr{slog.String("message_id", message.ID), slog.String("queue", message.QueueURL)}
	if due, ok := message.DueAt(); ok { // a hop for a limit (package fleetlimit) has none
		attrs = append(attrs, slog.Time("due_at", due.UTC()))
	}
	attrs = append(attrs, slog.Duration("delay", delay), slog.String("new_message_id", aws.ToString(output.MessageId)))
	p.config.Logger.LogAttrs(ctx, slog.LevelInfo, "producer: delayed job re-sent", attrs...)
	return nil
}
