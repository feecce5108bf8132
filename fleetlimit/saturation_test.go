package fleetlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// Saturation, scaled: two workers share a fleet-wide limit of 1 on one key, and 40 jobs
// of 400 ms arrive at once, so the key stays saturated for at least 16 s (about 25 s on
// ElasticMQ, 50 s on LocalStack, which returns messages whose visibility ended about once
// a second: localstack/README.md) while the redrive policy (maxReceiveCount 4, a
// deferral of 1-2 s each) would dead-letter a job after about 5 s of waiting. Every job
// is handled exactly once, never two at once by the downstream's own clock, and none
// reaches the dead-letter queue: the jobs that waited longest were re-sent (hops
// carrying prior-receives) several times, past maxReceiveCount receives in all. Ten
// minutes of saturation is this, longer.
func TestSaturationDeadLettersNoHealthyJob(t *testing.T) {
	t.Parallel()
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	const maxReceiveCount = 4
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: maxReceiveCount})
	hopper, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	service := newDownstream(t, 400*time.Millisecond)

	var mu sync.Mutex
	done := map[string]int{}
	mostReceives := 0 // receives before the handling one, over every hop
	var servers []*poller.Server
	for worker := range 2 {
		limiter := newLimiter(t, dynamo, fleetlimit.Config{
			Table: tableName, Name: "saturated", Concurrency: 1, Lease: 10 * time.Second,
			Key:        func(*sqsworker.Message) string { return "downstream" },
			RetryDelay: time.Second, Hopper: hopper, MaxReceiveCount: maxReceiveCount,
			Holder: fmt.Sprintf("worker-%d", worker),
		})
		handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			if err := service.call(ctx, "downstream"); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			done[m.Body]++
			mostReceives = max(mostReceives, fleetlimit.PriorReceives(m)+m.ReceiveCount-1)
			return nil
		})
		servers = append(servers, startWorker(t, sqsClient, queue.URL, 4, sqsworker.Chain(handler, limiter.Middleware())))
	}

	var jobs []producer.Job
	for i := range 40 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("job-%d", i)})
	}
	for batch := range slices.Chunk(jobs, 10) {
		_, err := hopper.SendBatch(context.Background(), queue.URL, batch)
		require.NoError(t, err)
	}
	testenv.Eventually(t, 180*time.Second, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == len(jobs)
	})
	testenv.WaitQueueEmpty(t, sqsClient, queue.URL, 30*time.Second)

	mu.Lock()
	for _, job := range jobs {
		assert.Equal(t, 1, done[job.Body], "%s handled exactly once", job.Body)
	}
	receives := mostReceives
	mu.Unlock()
	assert.Equal(t, 1, maxOverlap(service.recorded())["downstream"], "never two calls at once by the downstream's clock")
	assert.Greater(t, receives, maxReceiveCount, "the longest wait outlasted the redrive budget of one message")
	var deferred int64
	for _, server := range servers {
		stats := server.Stats()
		deferred += stats.Deferred
		assert.Zero(t, stats.Failed, "a deferral is not a failure")
		assert.Zero(t, stats.DeadLettered)
	}
	visible, inFlight := testenv.Counts(t, sqsClient, queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "no healthy job dead-lettered")
	t.Logf("%d jobs, %d deferrals, at most %d receives before a job's handling", len(jobs), deferred, receives)
}
