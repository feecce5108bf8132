package otelsqsworker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/otelsqsworker"
)

// countingClient counts GetQueueAttributes calls.
type countingClient struct {
	*sqs.Client
	calls atomic.Int64
}

func (c *countingClient) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.calls.Add(1)
	return c.Client.GetQueueAttributes(ctx, input, optFns...)
}

// TestQueueGauges: the gauges report a queue's visible, delayed and dead-letter counts
// from SQS, at one GetQueueAttributes per queue (and one per dead-letter queue) per
// interval.
func TestQueueGauges(t *testing.T) {
	t.Parallel()
	sqsClient := testenv.SQS(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	ctx := context.Background()
	send := func(url string, delay int32) {
		_, err := sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), DelaySeconds: delay})
		require.NoError(t, err)
	}
	send(queue.URL, 0)
	send(queue.URL, 0)
	send(queue.URL, 900)
	for range 3 {
		send(queue.DeadLetterQueueURL, 0)
	}

	reader := sdkmetric.NewManualReader()
	client := &countingClient{Client: sqsClient}
	const interval = 200 * time.Millisecond
	gauges, err := otelsqsworker.NewQueueGauges(otelsqsworker.QueueGaugesConfig{
		Client: client, QueueURLs: []string{queue.URL}, Interval: interval,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- gauges.Run(runCtx) }()

	q := "messaging.destination.name=" + otelsqsworker.QueueName(queue.URL)
	want := map[string]int64{
		"sqsworker.queue.messages.visible.g{" + q + "}":     2,
		"sqsworker.queue.messages.in_flight.g{" + q + "}":   0,
		"sqsworker.queue.messages.delayed.g{" + q + "}":     1,
		"sqsworker.queue.dead_letter.messages.g{" + q + "}": 3,
	}
	var got map[string]int64
	testenv.Eventually(t, 30*time.Second, "the gauges show the queue's counts", func() bool {
		got = sums(t, reader)
		for name, value := range want {
			if got[name] != value {
				return false
			}
		}
		return true
	})
	stop()
	require.True(t, errors.Is(<-done, context.Canceled))
	elapsed := time.Since(started)
	// One LoadQueue, then per reading one call for the queue and one for its DLQ.
	readings := int64(elapsed/interval) + 1
	require.LessOrEqual(t, client.calls.Load(), 1+2*readings, "calls in %s", elapsed)
	require.NoError(t, gauges.Close())
}
