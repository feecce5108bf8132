package poller

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// API is the part of the SQS client the poller uses. *sqs.Client satisfies it; tests
// pass a fake or a wrapper that counts calls.
//
// When the value also has an Options() sqs.Options method (as *sqs.Client does), [New]
// inspects its HTTP client's timeouts; see [Config.HTTPClientTimeout].
type API interface {
	// ReceiveMessage long-polls the queue (WaitTimeSeconds up to 20, at most 10 messages).
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	// DeleteMessageBatch deletes handled messages, up to 10 per call.
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	// ChangeMessageVisibility reschedules one failed or deferred message.
	ChangeMessageVisibility(ctx context.Context, input *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	// ChangeMessageVisibilityBatch extends (heartbeat) or releases (visibility 0) up to 10 messages.
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	// SendMessage sends a permanently failed message to the dead-letter queue.
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	// GetQueueAttributes reads the queue's settings at start.
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	// GetQueueUrl resolves the dead-letter queue named by the redrive policy at start.
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ API = (*sqs.Client)(nil)
