package fleetlimit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// Three worker processes (startProcessFleet: each its own limiter and DynamoDB client)
// share a rate of 8 starts a second over every job and a per-tenant limit of 2
// (LocalStack or ElasticMQ, moto), under 50 tenants and one hot one. By the
// downstream's own clock no one-second window holds more than 8 starts, no tenant more
// than 2 calls at once, and the whole run took at least what the rate allows; the
// downstream served each job exactly once and nothing was dead-lettered. The rate
// middleware runs outside the permit's, so no job holds a permit while it waits for its
// start.
func TestThreeWorkerProcessesShareARateAndATenantLimit(t *testing.T) {
	t.Parallel()
	const rate = 8
	fleet := startProcessFleet(t, 100*time.Millisecond, rate)
	var jobs []producer.Job
	for i := range 50 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("tenant-%d", i), GroupID: fmt.Sprintf("tenant-%d", i)})
	}
	for j := range 10 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("hot/%d", j), GroupID: "hot"})
	}
	calls, counts := fleet.run(t, jobs)

	most := mostStartsInAnySecond(calls)
	assert.LessOrEqual(t, most, rate, "no one-second window holds more than the rate, by the downstream's clock")
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
	t.Logf("%d calls over 3 processes in %s, at most %d in any second; %d deferrals, %d handled after a hop",
		len(calls), last.Sub(first), most, counts.deferred, counts.hopped)
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
