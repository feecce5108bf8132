package redrive

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// MoveTaskAPI is the part of the SQS client that the native move-task functions
// ([StartMoveTask], [ListMoveTasks], [CancelMoveTask], [WaitMoveTask]) use.
// *sqs.Client satisfies it.
type MoveTaskAPI interface {
	sqsinfo.QueueAttributesAPI
	StartMessageMoveTask(ctx context.Context, input *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, input *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

// MoverAPI is the part of the SQS client that [Mover] uses. *sqs.Client satisfies it;
// tests wrap it to inject faults (a failed batch entry, a crash between send and delete).
type MoverAPI interface {
	sqsinfo.QueueAttributesAPI
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// InspectAPI is the part of the SQS client that [Peek] uses. *sqs.Client satisfies it.
type InspectAPI interface {
	sqsinfo.QueueAttributesAPI
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var (
	_ MoveTaskAPI = (*sqs.Client)(nil)
	_ MoverAPI    = (*sqs.Client)(nil)
	_ InspectAPI  = (*sqs.Client)(nil)
)

// ErrQueueNotFound is returned (wrapped) when a queue name, URL or ARN names no queue.
var ErrQueueNotFound = sqsinfo.ErrQueueNotFound

// QueueURL resolves ref to a queue URL. ref is a queue URL (returned as is), a queue ARN
// ("arn:aws:sqs:REGION:ACCOUNT:NAME", resolved with GetQueueUrl in that account) or a
// queue name (resolved with GetQueueUrl in the caller's account). A queue that does not
// exist gives an error matching [ErrQueueNotFound].
//
// Deprecated: the CLI's use; it moves to the project's internal SQS layer.
func QueueURL(ctx context.Context, api sqsinfo.QueueURLAPI, ref string) (string, error) {
	url, err := sqsinfo.ResolveQueueURL(ctx, api, ref)
	if err != nil {
		return "", prefix(err)
	}
	return url, nil
}

// queueARN reads the ARN of the queue at url.
func queueARN(ctx context.Context, api sqsinfo.QueueAttributesAPI, url string) (string, error) {
	output, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", queueError(url, err)
	}
	arn := output.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("redrive: queue %s has no QueueArn attribute", url)
	}
	return arn, nil
}

// resolveARN resolves ref (a name, URL or ARN) to the queue's ARN.
func resolveARN(ctx context.Context, api sqsinfo.QueueAttributesAPI, ref string) (string, error) {
	url, err := QueueURL(ctx, api, ref)
	if err != nil {
		return "", err
	}
	return queueARN(ctx, api, url)
}

// loadQueue is sqsinfo.LoadQueue with a not-found error that matches ErrQueueNotFound.
func loadQueue(ctx context.Context, api sqsinfo.QueueAttributesAPI, url string) (*sqsinfo.Queue, error) {
	queue, err := sqsinfo.LoadQueue(ctx, api, url)
	if err != nil && sqsinfo.IsQueueNotFound(err) {
		return nil, fmt.Errorf("%w: %s (%w)", ErrQueueNotFound, url, err)
	}
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	return queue, nil
}

func queueError(ref string, err error) error {
	return prefix(sqsinfo.QueueError(ref, err))
}

// prefix adds the package's prefix to an error that does not match ErrQueueNotFound
// (whose text already names the queue).
func prefix(err error) error {
	if errors.Is(err, ErrQueueNotFound) {
		return err
	}
	return fmt.Errorf("redrive: %w", err)
}
