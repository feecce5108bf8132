package fleetlimit_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
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

// saturationJob is how long the downstream takes for one job of the saturation test.
const saturationJob = 400 * time.Millisecond

// saturation is how long TestSaturationDeadLettersNoHealthyJob keeps its key saturated
// at least: its jobs are saturation/saturationJob, one at a time. The default, 16 s (40
// jobs), runs with every go test; -fleetlimit.saturation=10m (make saturation) is the
// issue's ten minutes, 1,500 jobs.
var saturation = flag.Duration("fleetlimit.saturation", 40*saturationJob,
	"how long TestSaturationDeadLettersNoHealthyJob saturates its key: its jobs (of 400 ms, one at a time) are this divided by 400 ms")

// countingHopper counts the hops it passes on.
type countingHopper struct {
	next sqsworker.Hopper
	hops atomic.Int64
}

func (h *countingHopper) Hop(ctx context.Context, message *sqsworker.Message, remaining time.Duration) error {
	err := h.next.Hop(ctx, message, remaining)
	if err == nil {
		h.hops.Add(1)
	}
	return err
}

// Saturation, scaled by -fleetlimit.saturation: two workers share a fleet-wide limit of
// 1 on one key, and saturation/400 ms jobs of 400 ms arrive at once (by default 40, so
// the key stays saturated for at least 16 s: about 25 s on ElasticMQ, 50 s on
// LocalStack, which returns messages whose visibility ended about once a second:
// localstack/README.md) while the redrive policy (maxReceiveCount 4, a deferral of 1-2
// s each) would dead-letter a job after about 5 s of waiting. Every job is handled
// exactly once, never two at once by the downstream's own clock, and none reaches the
// dead-letter queue: the jobs that waited longest were re-sent (hops carrying
// prior-receives) several times, past maxReceiveCount receives in all. Ten minutes of
// saturation is this, longer: -fleetlimit.saturation=10m (make saturation), 1,500 jobs,
// handled in 10 min 45 s on LocalStack (docs/benchmarks.md).
func TestSaturationDeadLettersNoHealthyJob(t *testing.T) {
	t.Parallel()
	jobCount := int(*saturation / saturationJob)
	require.GreaterOrEqual(t, jobCount, 2, "-fleetlimit.saturation=%s: at least two jobs of %s", *saturation, saturationJob)
	// The default size waits up to 180 s; a longer saturation proportionally longer,
	// but not past the test binary's -timeout (so that it fails here, with counts).
	wait := 180 * time.Second * time.Duration(jobCount) / 40
	if deadline, ok := t.Deadline(); ok {
		wait = min(wait, time.Until(deadline)-time.Minute)
	}
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	const maxReceiveCount = 4
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: maxReceiveCount})
	jobsProducer, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hopper := &countingHopper{next: jobsProducer}
	service := newDownstream(t, saturationJob)

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
			if err := callDownstream(ctx, service.server.URL, "downstream", m.Body); err != nil {
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
	for i := range jobCount {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("job-%d", i)})
	}
	for batch := range slices.Chunk(jobs, 10) {
		_, err := jobsProducer.SendBatch(context.Background(), queue.URL, batch)
		require.NoError(t, err)
	}
	sent := time.Now()
	testenv.Eventually(t, wait, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == len(jobs)
	})
	wall := time.Since(sent)
	testenv.WaitQueueEmpty(t, sqsClient, queue.URL, 30*time.Second)

	mu.Lock()
	for _, job := range jobs {
		assert.Equal(t, 1, done[job.Body], "%s handled exactly once", job.Body)
	}
	receives := mostReceives
	mu.Unlock()
	calls := service.recorded()
	handledOnce(t, calls, jobs)
	assert.Equal(t, 1, maxOverlap(calls)["downstream"], "never two calls at once by the downstream's clock")
	var busy time.Duration // the downstream's time serving calls, by its clock
	first, last := calls[0].start, calls[0].end
	for _, c := range calls {
		busy += c.end.Sub(c.start)
		first, last = minTime(first, c.start), maxTime(last, c.end)
	}
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
	t.Logf("saturation %s: %d jobs of %s handled in %s (the downstream busy %s of its %s from first call to last), %d deferrals, %d hops, at most %d receives before a job's handling, %d dead-lettered",
		*saturation, len(jobs), saturationJob, wall.Round(time.Millisecond), busy.Round(time.Millisecond), last.Sub(first).Round(time.Millisecond),
		deferred, hopper.hops.Load(), receives, visible+inFlight)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
