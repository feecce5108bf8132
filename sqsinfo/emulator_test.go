package sqsinfo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

func TestLoadQueueResolvesTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 45 * time.Second, MaxReceiveCount: 5})

	queue, err := sqsinfo.LoadQueue(context.Background(), client, created.URL)
	require.NoError(t, err)
	assert.Equal(t, created.ARN, queue.ARN)
	assert.False(t, queue.FIFO)
	assert.Equal(t, 45*time.Second, queue.VisibilityTimeout)
	t.Run("MaximumMessageSize", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention)
		assert.Positive(t, queue.MaximumMessageSize)
	})
	require.NotNil(t, queue.RedrivePolicy)
	assert.Equal(t, 5, queue.RedrivePolicy.MaxReceiveCount)
	assert.Equal(t, created.DeadLetterQueueARN, queue.RedrivePolicy.DeadLetterTargetARN)
	assert.Equal(t, created.DeadLetterQueueURL, queue.DeadLetterQueueURL)
}

func TestLoadQueueWithoutRedrivePolicy(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	created := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	queue, err := sqsinfo.LoadQueue(context.Background(), client, created.URL)
	require.NoError(t, err)
	assert.Nil(t, queue.RedrivePolicy)
	assert.Empty(t, queue.DeadLetterQueueURL)

	_, err = sqsinfo.LoadQueue(context.Background(), client, created.URL+"-missing")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sqsinfo: reading attributes of queue")
}
