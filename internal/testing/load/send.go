// Package load sends many message bodies to a queue quickly, for the soak and the bench.
package load

import (
	"context"
	"fmt"
	"sync"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/producer"
)

// SendBodies sends bodies to queueURL through the producer ([producer.Producer.SendBatch],
// ten per SendMessageBatch, SQS's limit), from senders goroutines at once (at least
// one). It stops at the first body that could not be sent, or ctx's end, and returns that
// error.
func SendBodies(ctx context.Context, client producer.API, queueURL string, bodies []string, senders int) error {
	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	batches := make(chan []string)
	errs := make(chan error, max(senders, 1))
	var wg sync.WaitGroup
	for range max(senders, 1) {
		wg.Go(func() {
			for batch := range batches {
				batchJobs := make([]producer.Job, len(batch))
				for i, body := range batch {
					batchJobs[i] = producer.Job{Body: body}
				}
				if _, err := jobs.SendBatch(ctx, queueURL, batchJobs); err != nil {
					errs <- fmt.Errorf("load: %w", err)
					return
				}
			}
		})
	}
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
