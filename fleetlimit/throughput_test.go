package fleetlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// TestMeasureThroughputAt50Tenants (FLEETLIMIT_MEASURE=1; LocalStack, moto) measures
// three workers' throughput over 50 tenants with and without a per-tenant limit of 2
// (each tenant has 4 jobs of 20 ms, so the limit binds only when a tenant's jobs
// arrive together), and the DynamoDB calls a job. It asserts nothing but completion:
// the figures go to docs/benchmarks.md.
func TestMeasureThroughputAt50Tenants(t *testing.T) {
	if os.Getenv("FLEETLIMIT_MEASURE") == "" {
		t.Skip("a measurement: set FLEETLIMIT_MEASURE=1")
	}
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	for _, limited := range []bool{false, true} {
		queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: 5})
		jobs, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		api := &countingAPI{API: dynamo}
		var handled atomic.Int64
		var deferred int64
		work := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			timer := time.NewTimer(20 * time.Millisecond) // the job's work
			<-timer.C
			handled.Add(1)
			return nil
		})
		var servers []*poller.Server
		for worker := range 3 {
			handler := sqsworker.Handler(work)
			if limited {
				limiter := newLimiter(t, api, fleetlimit.Config{
					Table: tableName, Name: "measure", Concurrency: 2, RetryDelay: time.Second,
					Key:    func(m *sqsworker.Message) string { return m.GroupID },
					Hopper: jobs, MaxReceiveCount: 5, Holder: fmt.Sprint("w", worker),
				})
				handler = sqsworker.Chain(work, limiter.Middleware())
			}
			servers = append(servers, startWorker(t, sqsClient, queue.URL, 10, handler))
		}
		var batch []producer.Job
		for i := range 200 {
			batch = append(batch, producer.Job{Body: fmt.Sprint(i), GroupID: fmt.Sprint("tenant-", i%50)})
		}
		start := time.Now()
		for chunk := range slices.Chunk(batch, 10) {
			_, err := jobs.SendBatch(context.Background(), queue.URL, chunk)
			require.NoError(t, err)
		}
		testenv.Eventually(t, 120*time.Second, "every job handled", func() bool { return handled.Load() == int64(len(batch)) })
		elapsed := time.Since(start)
		for _, server := range servers {
			deferred += server.Stats().Deferred
		}
		t.Logf("limited=%t: %d jobs in %s, %.1f jobs/s, %d deferrals, %.2f DynamoDB calls a job",
			limited, len(batch), elapsed.Round(time.Millisecond), float64(len(batch))/elapsed.Seconds(), deferred, float64(api.calls.Load())/float64(len(batch)))
	}
}
