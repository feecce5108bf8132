package fleetlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// call is one request the downstream served, timed by the downstream itself.
type call struct {
	key        string
	start, end time.Time
}

// downstream is a test HTTP service that records, by its own clock, when each request
// for a key arrived and when it answered; each request takes work.
type downstream struct {
	server *httptest.Server
	mu     sync.Mutex
	calls  []call
}

func newDownstream(t *testing.T, work time.Duration) *downstream {
	d := &downstream{}
	d.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if work > 0 {
			timer := time.NewTimer(work) // the work itself, not a wait for a condition
			<-timer.C
		}
		d.mu.Lock()
		d.calls = append(d.calls, call{key: r.URL.Query().Get("key"), start: start, end: time.Now()})
		d.mu.Unlock()
	}))
	t.Cleanup(d.server.Close)
	return d
}

// call asks the downstream on behalf of key.
func (d *downstream) call(ctx context.Context, key string) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, d.server.URL+"/?key="+key, nil)
	if err != nil {
		return err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return err
	}
	return response.Body.Close()
}

func (d *downstream) recorded() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// maxOverlap returns, per key, the most calls the downstream was serving at once (a call
// that ended at the instant another started does not overlap it).
func maxOverlap(calls []call) map[string]int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := map[string][]edge{}
	for _, c := range calls {
		edges[c.key] = append(edges[c.key], edge{c.start, 1}, edge{c.end, -1})
	}
	most := map[string]int{}
	for key, list := range edges {
		slices.SortFunc(list, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.delta - b.delta // ends first
		})
		running := 0
		for _, e := range list {
			running += e.delta
			most[key] = max(most[key], running)
		}
	}
	return most
}

// startWorker runs one poller on queueURL with handler, stopped when the test ends.
func startWorker(t testing.TB, client *sqs.Client, queueURL string, concurrency int, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, Concurrency: concurrency, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// Three workers (three poller servers, each with its own limiter and holder name, as
// three processes would have) share a per-tenant limit of 2 under 50 tenants, one of
// them hot (LocalStack or ElasticMQ, moto). The downstream's own timestamps show no
// tenant ever served more than 2 calls at once, and the hot tenant reached 2 (the limit
// binds). Every job runs, none is dead-lettered: jobs at their last receive but one are
// re-sent (hops carrying prior-receives) instead of being deferred into the DLQ.
func TestThreeWorkersKeepAPerTenantLimitOfTwo(t *testing.T) {
	t.Parallel()
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	const maxReceiveCount = 4
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: maxReceiveCount})
	hopper, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	service := newDownstream(t, 150*time.Millisecond)

	var mu sync.Mutex
	done := map[string]int{}
	hopped := 0
	var servers []*poller.Server
	for worker := range 3 {
		limiter := newLimiter(t, dynamo, fleetlimit.Config{
			Table: tableName, Name: "tenants", Concurrency: 2, Lease: 10 * time.Second,
			Key:        func(m *sqsworker.Message) string { return m.GroupID },
			RetryDelay: time.Second, Hopper: hopper, MaxReceiveCount: maxReceiveCount,
			Holder: fmt.Sprintf("worker-%d", worker),
		})
		handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			if err := service.call(ctx, m.GroupID); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			done[m.Body]++
			if fleetlimit.PriorReceives(m) > 0 {
				hopped++
			}
			return nil
		})
		servers = append(servers, startWorker(t, sqsClient, queue.URL, 8, sqsworker.Chain(handler, limiter.Middleware())))
	}

	var jobs []producer.Job
	for i := range 50 {
		for j := range 2 {
			jobs = append(jobs, producer.Job{Body: fmt.Sprintf("tenant-%d/%d", i, j), GroupID: fmt.Sprintf("tenant-%d", i)})
		}
	}
	for j := range 20 {
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
	overlap := maxOverlap(service.recorded())
	for key, most := range overlap {
		assert.LessOrEqual(t, most, 2, "tenant %s: at most 2 calls at once by the downstream's clock", key)
	}
	assert.Equal(t, 2, overlap["hot"], "the hot tenant reached its limit")
	assert.Len(t, overlap, 51)
	var deferred int64
	for _, server := range servers {
		stats := server.Stats()
		deferred += stats.Deferred
		assert.Zero(t, stats.Failed, "a deferral is not a failure")
		assert.Zero(t, stats.DeadLettered)
	}
	visible, inFlight := testenv.Counts(t, sqsClient, queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "no healthy job dead-lettered")
	mu.Lock()
	t.Logf("%d jobs, %d deferrals, %d handled after a hop", len(jobs), deferred, hopped)
	mu.Unlock()
	assert.Positive(t, deferred, "the limit deferred jobs")
}
