package fleetlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// processFleet is three worker processes polling one queue (with a dead-letter queue
// of maxReceiveCount workerMaxReceiveCount), sharing a table (moto), and the downstream
// they call, an HTTP server in this process: its clock decides.
type processFleet struct {
	sqs     *sqs.Client
	queue   testenv.Queue
	service *downstream
	workers []*workerProcess
}

// startProcessFleet starts the three workers with a downstream whose calls take work
// and, if rate is not zero, a shared rate of that many starts a second.
func startProcessFleet(t *testing.T, work time.Duration, rate float64) *processFleet {
	t.Helper()
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	f := &processFleet{
		sqs:     sqsClient,
		queue:   testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: workerMaxReceiveCount}),
		service: newDownstream(t, work),
	}
	for i := range 3 {
		f.workers = append(f.workers, startWorkerProcess(t, workerOptions{
			table: tableName, queueURL: f.queue.URL, downstreamURL: f.service.server.URL,
			holder: fmt.Sprintf("worker-%d", i), rate: rate,
		}))
	}
	return f
}

// run sends jobs, waits until the downstream served each and the queue is empty, and
// stops the workers. It asserts that the downstream served each job's body exactly
// once, that no worker failed or dead-lettered a job and that the dead-letter queue is
// empty; it returns the downstream's calls and the workers' counts.
func (f *processFleet) run(t *testing.T, jobs []producer.Job) ([]call, workerCounts) {
	t.Helper()
	jobsProducer, err := producer.New(f.sqs, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for batch := range slices.Chunk(jobs, 10) {
		_, err := jobsProducer.SendBatch(context.Background(), f.queue.URL, batch)
		require.NoError(t, err)
	}
	testenv.Eventually(t, 120*time.Second, "every job handled", func() bool {
		handled := map[string]bool{}
		for _, c := range f.service.recorded() {
			handled[c.job] = true
		}
		return len(handled) == len(jobs)
	})
	testenv.WaitQueueEmpty(t, f.sqs, f.queue.URL, 30*time.Second)
	counts := stopWorkers(t, f.workers)
	calls := f.service.recorded() // the workers are gone: no call comes after this
	handledOnce(t, calls, jobs)
	visible, inFlight := testenv.Counts(t, f.sqs, f.queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "no healthy job dead-lettered")
	return calls, counts
}

// Three worker processes (this test binary again, each with its own limiter, DynamoDB
// client and holder name: the permits' only shared state is the table) share a
// per-tenant limit of 2 under 50 tenants, one of them hot (LocalStack or ElasticMQ,
// moto). The downstream's own timestamps show no tenant ever served more than 2 calls
// at once, and the hot tenant reached 2 (the limit binds). Every job runs exactly once,
// none is dead-lettered: jobs at their last receive but one are re-sent (hops carrying
// prior-receives) instead of being deferred into the DLQ.
func TestThreeWorkerProcessesKeepAPerTenantLimitOfTwo(t *testing.T) {
	t.Parallel()
	fleet := startProcessFleet(t, 150*time.Millisecond, 0)
	var jobs []producer.Job
	for i := range 50 {
		for j := range 2 {
			jobs = append(jobs, producer.Job{Body: fmt.Sprintf("tenant-%d/%d", i, j), GroupID: fmt.Sprintf("tenant-%d", i)})
		}
	}
	for j := range 20 {
		jobs = append(jobs, producer.Job{Body: fmt.Sprintf("hot/%d", j), GroupID: "hot"})
	}
	calls, counts := fleet.run(t, jobs)

	overlap := maxOverlap(calls)
	for key, most := range overlap {
		assert.LessOrEqual(t, most, 2, "tenant %s: at most 2 calls at once by the downstream's clock", key)
	}
	assert.Equal(t, 2, overlap["hot"], "the hot tenant reached its limit")
	assert.Len(t, overlap, 51)
	assert.Positive(t, counts.deferred, "the limit deferred jobs")
	t.Logf("%d jobs over 3 processes, %d deferrals, %d handled after a hop", len(jobs), counts.deferred, counts.hopped)
}
