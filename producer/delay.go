package producer

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// DelayMiddleware is the consumer side of delays longer than one hop (Config.MaxHop,
// at most SQS's 15 minutes). A message whose [sqsworker.AttributeDueAt] is still ahead
// is not handed to the handler: it is sent again to its queue, body and attributes
// unchanged, with the rest of its delay (at most MaxHop), and the middleware returns nil
// only after SQS confirmed that send, so the host deletes the original only then. A
// failed re-send is an ordinary failure (the host retries the original). Each hop is a
// new message whose receive count starts again, so waiting never counts toward the
// redrive policy's maxReceiveCount. A due message is handed on without the due-at
// attribute. The due time is the producer's clock plus the delay, compared with the
// worker's clock (Config.Now): clock skew between the two shifts the run by as much.
// Each hop leaves one info line in Config.Logger.
//
// A due time further ahead than Config.DueAtHorizon (365 days by default), or a due-at
// attribute that is not a positive integer of milliseconds, is a permanent failure with
// reason sqsworker.ReasonDueAtTooFar or sqsworker.ReasonMalformedDueAt (see
// sqsworker.Message.DueIn): the host dead-letters the job after that one receive, and it
// does not hop. Without the bound, a chain of hops would never end (each hop is a new
// message: the retention period and the receive count start again).
//
// Put it outermost, before idempotency (each hop has a new message id) and before a
// claim-check resolver (a hop re-sends the pointer, not the payload). A crash between
// the re-send and the delete leaves two copies of the job (SQS's at-least-once): the
// idempotency middleware with Job.IdempotencyKey suppresses the second. On a FIFO queue
// (which takes no per-message delay) a not-due message is deferred through its
// visibility timeout instead.
func (p *Producer) DelayMiddleware() sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			if _, ok := message.MessageAttributes[sqsworker.AttributeDueAt]; !ok {
				return next.Handle(ctx, message)
			}
			remaining, err := message.DueIn(p.config.Now(), p.config.DueAtHorizon)
			if err != nil {
				return err
			}
			if remaining == 0 {
				return next.Handle(ctx, withoutDueAt(message))
			}
			if isFIFO(message.QueueURL) {
				return sqsworker.Defer(remaining, "NotDue") // the host clamps it to the visibility limit
			}
			return p.hop(ctx, message, min(remaining, p.config.MaxHop))
		})
	}
}

// hop sends message again to its queue with the given delay.
func (p *Producer) hop(ctx context.Context, message *sqsworker.Message, delay time.Duration) error {
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
	due, _ := message.DueAt()
	p.config.Logger.LogAttrs(ctx, slog.LevelInfo, "producer: delayed job re-sent",
		slog.String("message_id", message.ID), slog.String("queue", message.QueueURL),
		slog.Time("due_at", due.UTC()), slog.Duration("delay", delay),
		slog.String("new_message_id", aws.ToString(output.MessageId)))
	return nil
}

// withoutDueAt returns a copy of message without the due-at attribute.
func withoutDueAt(message *sqsworker.Message) *sqsworker.Message {
	copied := *message
	copied.MessageAttributes = maps.Clone(message.MessageAttributes)
	delete(copied.MessageAttributes, sqsworker.AttributeDueAt)
	return &copied
}
