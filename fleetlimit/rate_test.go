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
	"github.com/sqsworker/sqsworker/producer"
)

// mostStartsInAnySecond returns the most calls that started within one second of each
// other: for each call, the calls starting in [its start, its start + 1 s).
func mostStartsInAnySecond(calls []call) int {
	starts := make([]time.Time, len(calls))
	for i, c := range calls {
		starts[i] = c.start
	}
	slices.SortFunc(starts, time.Time.Compare)
	most := 0
	for i, start := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(start) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// Three workers share a rate of 8 starts a second over every job and a per-tenant
// limit of 2 (LocalStack or ElasticMQ, moto), under 50 tenants and one hot one. By the
// downstream's own clock no one-second window holds more than 8 starts, no tenant more
// than 2 calls at once, and the whole run took at least what the rate allows. The rate
// middleware runs outside the permit's, so no job holds a permit while it waits for its
// start.
func TestThreeWorkersShareARateAndATenantLimit(t *testing.T) {
	t.Parallel()
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: 5})
	hopper, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	service := newDownstream(t, 100*time.Millisecond)
	const rate = 8

	var mu sync.Mutex
	done := map[string]bool{}
	var handlerStarts []call
	for worker := range 3 {
		limiter := newLimiter(t, dynamo, fleetlimit.Config{
			Table: tableName, Name: "api", Rate: rate, MaxWait: 3 * time.Second,
			RateKey:     func(*sqsworker.Message) string { return "all" },
			Concurrency: 2, Key: func(m *sqsworker.Message) string { return m.GroupID },
			RetryDelay: time.Second, Hopper: hopper, MaxReceiveCount: 5, Holder: fmt.Sprintf("worker-%d", worker),
		})
		handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			mu.Lock()
			handlerStarts = append(handlerStarts, call{start: time.Now()})
			mu.Unlock()
			if err := service.call(ctx, m.GroupID); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			done[m.Body] = true
			return nil
		})
		startWorker(t, sqsClient, queue.URL, 8, sqsworker.Chain(handler, limiter.Middleware()))
	}
	var jobs []producer.Job
	for i := range 50 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("tenant-%d", i), GroupID: fmt.Sprintf("tenant-%d", i)})
	}
	for j := range 10 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("hot/%d", j), GroupID: "hot"})
	}
	for batch := range slices.Chunk(jobs, 10) {
		_, err := hopper.SendBatch(context.Background(), queue.URL, batch)
		require.NoError(t, err)
	}
	testenv.Eventually(t, 120*time.Second, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == len(jobs)
	})
	calls := service.recorded()
	assert.LessOrEqual(t, mostStartsInAnySecond(calls), rate, "no one-second window holds more than the rate, by the downstream's clock")
	for key, most := range maxOverlap(calls) {
		assert.LessOrEqual(t, most, 2, "tenant %s", key)
	}
	first, last := calls[0].start, calls[0].start
	for _, c := range calls {
		if c.start.Before(first) {
			first = c.start
		}
		if c.start.After(last) {
			last = c.start
		}
	}
	assert.GreaterOrEqual(t, last.Sub(first), time.Duration(len(calls)-1)*time.Second/rate, "the rate held the run back")
	visible, inFlight := testenv.Counts(t, sqsClient, queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "no healthy job dead-lettered")
	t.Logf("handler starts: at most %d in any second", mostStartsInAnySecond(handlerStarts))
	t.Logf("%d calls in %s, at most %d in any second", len(calls), last.Sub(first), mostStartsInAnySecond(calls))
}

// Sixty starts reserved at once by three limiters (moto), with the rate in one item and
// spread over four: the reserved instants hold no more than the rate in any second, and
// every reservation got an instant of its own.
func TestReservedStartsKeepTheRate(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			t.Parallel()
			var limiters []*fleetlimit.Limiter
			for range 3 {
				limiters = append(limiters, newLimiter(t, client, fleetlimit.Config{
					Table: tableName, Name: fmt.Sprint("shards-", shards), Rate: 40, RateShards: shards, MaxWait: 10 * time.Second,
				}))
			}
			var mu sync.Mutex
			var starts []call
			var wg sync.WaitGroup
			for i := range 60 {
				wg.Go(func() {
					start, err := limiters[i%3].Reserve(context.Background(), "api")
					require.NoError(t, err)
					mu.Lock()
					starts = append(starts, call{start: start})
					mu.Unlock()
				})
			}
			wg.Wait()
			require.Len(t, starts, 60)
			assert.LessOrEqual(t, mostStartsInAnySecond(starts), 40)
			distinct := map[time.Time]bool{}
			for _, s := range starts {
				distinct[s.start] = true
			}
			assert.Greater(t, len(distinct), 60-shards, "one instant each (shards may share one)")
		})
	}
}
