package redrive

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// MoveTaskAPI is the part of the SQS client that the native move-task functions
// ([StartMoveTask], [ListMoveTasks], [CancelMoveTask], [WaitMoveTask]) use.
// *sqs.Client satisfies it.
type MoveTaskAPI interface {
	sqsworker.QueueAttributesAPI
	StartMessageMoveTask(ctx context.Context, input *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, input *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

// MoverAPI is the part of the SQS client that [Mover] uses. *sqs.Client satisfies it;
// tests wrap it to inject faults (a failed batch entry, a crash between send and delete).
type MoverAPI interface {
	sqsworker.QueueAttributesAPI
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// InspectAPI is the part of the SQS client that [Peek] uses. *sqs.Client satisfies it.
type InspectAPI interface {
	sqsworker.QueueAttributesAPI
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var (
	_ MoveTaskAPI = (*sqs.Client)(nil)
	_ MoverAPI    = (*sqs.Client)(nil)
	_ InspectAPI  = (*sqs.Client)(nil)
)

// ErrQueueNotFound is returned (wrapped) when a queue name, URL or ARN names no queue.
var ErrQueueNotFound = errors.New("redrive: queue does not exist")

// QueueURL resolves ref to a queue URL. ref is a queue URL (returned as is), a queue ARN
// ("arn:aws:sqs:REGION:ACCOUNT:NAME", resolved with GetQueueUrl in that account) or a
// queue name (resolved with GetQueueUrl in the caller's account). A queue that does not
// exist gives an error matching [ErrQueueNotFound].
func QueueURL(ctx context.Context, api sqsworker.QueueAttributesAPI, ref string) (string, error) {
	if ref == "" {
		return "", errors.New("redrive: empty queue name")
	}
	if strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "http://") {
		return ref, nil
	}
	input := &sqs.GetQueueUrlInput{QueueName: aws.String(ref)}
	if strings.HasPrefix(ref, "arn:") {
		parts := strings.Split(ref, ":")
		if len(parts) != 6 || parts[2] != "sqs" || parts[5] == "" {
			return "", fmt.Errorf("redrive: %q is not an SQS queue ARN", ref)
		}
		input = &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])}
	}
	output, err := api.GetQueueUrl(ctx, input)
	if err != nil {
		return "", queueError(ref, err)
	}
	return aws.ToString(output.QueueUrl), nil
}

// queueARN reads the ARN of the queue at url.
func queueARN(ctx context.Context, api sqsworker.QueueAttributesAPI, url string) (string, error) {
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
func resolveARN(ctx context.Context, api sqsworker.QueueAttributesAPI, ref string) (string, error) {
	url, err := QueueURL(ctx, api, ref)
	if err != nil {
		return "", err
	}
	return queueARN(ctx, api, url)
}

// loadQueue is sqsworker.LoadQueue with a not-found error that matches ErrQueueNotFound.
func loadQueue(ctx context.Context, api sqsworker.QueueAttributesAPI, url string) (*sqsworker.Queue, error) {
	queue, err := sqsworker.LoadQueue(ctx, api, url)
	if err != nil && isQueueNotFound(err) {
		return nil, fmt.Errorf("%w: %s (%w)", ErrQueueNotFound, url, err)
	}
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	return queue, nil
}

func queueError(ref string, err error) error {
	if isQueueNotFound(err) {
		return fmt.Errorf("%w: %s (%w)", ErrQueueNotFound, ref, err)
	}
	return fmt.Errorf("redrive: queue %s: %w", ref, err)
}

// isQueueNotFound reports whether err is SQS's "queue does not exist" error. The JSON
// protocol names it QueueDoesNotExist; some endpoints answer
// AWS.SimpleQueueService.NonExistentQueue.
func isQueueNotFound(err error) bool {
	if _, ok := errors.AsType[*types.QueueDoesNotExist](err); ok {
		return true
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		code := coded.ErrorCode()
		return code == "AWS.SimpleQueueService.NonExistentQueue" || code == "QueueDoesNotExist"
	}
	return false
}
