package sqsx

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// DeleteAPI is the part of the SQS client [DeleteMessages] uses.
type DeleteAPI interface {
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// VisibilityAPI is the part of the SQS client [ChangeVisibility] uses.
type VisibilityAPI interface {
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// SendAPI is the part of the SQS client [SendMessages] uses.
type SendAPI interface {
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var (
	_ DeleteAPI     = (*sqs.Client)(nil)
	_ VisibilityAPI = (*sqs.Client)(nil)
	_ SendAPI       = (*sqs.Client)(nil)
)

// DeleteMessages deletes the messages with receiptHandles from queueURL with
// DeleteMessageBatch, ten per request, and returns one [Result] per handle. optFns are
// passed to every call (a per-call retryer, for example).
func DeleteMessages(ctx context.Context, api DeleteAPI, queueURL string, receiptHandles []string, optFns ...func(*sqs.Options)) []Result {
	return Batch(ctx, "DeleteMessageBatch", receiptHandles, nil, 0,
		func(ctx context.Context, ids []string, chunk []string) (Response, error) {
			entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
			for i, handle := range chunk {
				entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(ids[i]), ReceiptHandle: aws.String(handle)}
			}
			output, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries}, optFns...)
			if err != nil {
				return Response{}, err
			}
			response := Response{Failed: output.Failed, Successful: make([]Success, len(output.Successful))}
			for i, ok := range output.Successful {
				response.Successful[i] = Success{ID: aws.ToString(ok.Id)}
			}
			return response, nil
		})
}

// VisibilityChange is one message's new visibility timeout, from now.
type VisibilityChange struct {
	ReceiptHandle string
	// Timeout is sent as [VisibilitySeconds] (rounded up, 0 to 12 h).
	Timeout time.Duration
}

// ChangeVisibility sets the visibility timeouts of messages in queueURL with
// ChangeMessageVisibilityBatch, ten per request, and returns one [Result] per change.
func ChangeVisibility(ctx context.Context, api VisibilityAPI, queueURL string, changes []VisibilityChange, optFns ...func(*sqs.Options)) []Result {
	return Batch(ctx, "ChangeMessageVisibilityBatch", changes, nil, 0,
		func(ctx context.Context, ids []string, chunk []VisibilityChange) (Response, error) {
			entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
			for i, change := range chunk {
				entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
					Id:                aws.String(ids[i]),
					ReceiptHandle:     aws.String(change.ReceiptHandle),
					VisibilityTimeout: VisibilitySeconds(change.Timeout),
				}
			}
			output, err := api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: entries}, optFns...)
			if err != nil {
				return Response{}, err
			}
			response := Response{Failed: output.Failed, Successful: make([]Success, len(output.Successful))}
			for i, ok := range output.Successful {
				response.Successful[i] = Success{ID: aws.ToString(ok.Id)}
			}
			return response, nil
		})
}

// SendMessages sends entries to queueURL with SendMessageBatch, packed by count (ten)
// and by size ([SendEntrySize]) up to maxBatchBytes per request (0 or more than
// [sqsinfo.MaxBatchBytes] means that limit), and returns one [Result] per entry. Each
// entry's Id is set by SendMessages ([EntryID]); any Id the caller set is overwritten. An
// entry larger than maxBatchBytes alone is not sent ([CodeTooLarge]).
func SendMessages(ctx context.Context, api SendAPI, queueURL string, entries []types.SendMessageBatchRequestEntry, maxBatchBytes int, optFns ...func(*sqs.Options)) []Result {
	if maxBatchBytes <= 0 || maxBatchBytes > sqsinfo.MaxBatchBytes {
		maxBatchBytes = sqsinfo.MaxBatchBytes
	}
	return Batch(ctx, "SendMessageBatch", entries, SendEntrySize, maxBatchBytes,
		func(ctx context.Context, ids []string, chunk []types.SendMessageBatchRequestEntry) (Response, error) {
			request := make([]types.SendMessageBatchRequestEntry, len(chunk))
			for i, entry := range chunk {
				entry.Id = aws.String(ids[i])
				request[i] = entry
			}
			output, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: request}, optFns...)
			if err != nil {
				return Response{}, err
			}
			response := Response{Failed: output.Failed, Successful: make([]Success, len(output.Successful))}
			for i, ok := range output.Successful {
				response.Successful[i] = Success{ID: aws.ToString(ok.Id), MessageID: aws.ToString(ok.MessageId), SequenceNumber: aws.ToString(ok.SequenceNumber)}
			}
			return response, nil
		})
}
