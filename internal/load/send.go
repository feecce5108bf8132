// Package load sends many message bodies to a queue quickly, for the soak and the bench.
package load

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// BatchSender is the part of the SQS client SendBodies uses; *sqs.Client satisfies it.
type BatchSender interface {
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ BatchSender = (*sqs.Client)(nil)

// SendBodies sends bodies to queueURL, ten per SendMessageBatch (SQS's limit), from
// senders goroutines at once (at least one). It stops at the first failed call, a batch
// with failed entries, or ctx's end, and returns that error.
func SendBodies(ctx context.Context, client BatchSender, queueURL string, bodies []string, senders int) error {
	batches := make(chan []string)
	errs := make(chan error, max(senders, 1))
	var wg sync.WaitGroup
	for range max(senders, 1) {
		wg.Go(func() {
			for batch := range batches {
				entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
				for i, body := range batch {
					entries[i] = sqstypes.SendMessageBatchRequestEntry{MessageBody: aws.String(body)}
				}
				for _, result := range sqsx.SendMessages(ctx, client, queueURL, entries, 0) {
					if result.Err != nil {
						errs <- fmt.Errorf("load: %w", result.Err)
						return
					}
				}
			}
		})
	}
	var err error
feed:
	for _, batch := range sqsx.Chunk(bodies, 0, nil, 0) {
		select {
		case batches <- batch:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(batches)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
