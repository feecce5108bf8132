// Package load sends many message bodies to a queue quickly, for the soak and the bench.
package load

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
					entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)}
				}
				output, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
				if err == nil && len(output.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(output.Failed), aws.ToString(output.Failed[0].Message))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for start := 0; start < len(bodies); start += 10 {
		select {
		case batches <- bodies[start:min(start+10, len(bodies))]:
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
