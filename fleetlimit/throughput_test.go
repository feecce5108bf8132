package fleetlimit_test

import (
	"context"
	"fmt"
	"log/slog"
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

// BenchmarkThroughputAt50Tenants measures three workers' throughput over 50 tenants
// without a limiter and with a per-tenant limit of 2 (each tenant has 4 jobs of 20 ms
// in a round of 200, so the limit binds only when a tenant's jobs arrive together),
// with the DynamoDB calls and deferrals a job, on the emulators:
//
//	go test -run '^$' -bench ThroughputAt50Tenants -benchtime 3x ./fleetlimit/
//
// Each iteration sends a round of 200 jobs and waits until all are handled. The
// figures go to docs/benchmarks.md ("Fleet-wide limits").
func BenchmarkThroughputAt50Tenants(b *testing.B) {
	sqsClient := testenv.SQS(b)
	dynamo := testenv.DynamoDB(b)
	tableName := testenv.NewTable(b, dynamo)
	for _, limited := range []bool{false, true} {
		b.Run(map[bool]string{false: "no_limiter", true: "tenant_limit_2"}[limited], func(b *testing.B) {
			queue := testenv.NewQueue(b, sqsClient, testenv.QueueOptions{MaxReceiveCount: 5})
			jobs, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			api := &countingAPI{API: dynamo}
			var handled atomic.Int64
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
					limiter := newLimiter(b, api, fleetlimit.Config{
						Table: tableName, Name: "measure", Concurrency: 2, RetryDelay: time.Second,
						Key:    func(m *sqsworker.Message) string { return m.GroupID },
						Hopper: jobs, MaxReceiveCount: 5, Holder: fmt.Sprint("w", worker),
					})
					handler = sqsworker.Chain(work, limiter.Middleware())
				}
				servers = append(servers, startWorker(b, sqsClient, queue.URL, 10, handler))
			}
			const round = 200
			var batch []producer.Job
			for i := range round {
				batch = append(batch, producer.Job{Body: fmt.Sprint(i), GroupID: fmt.Sprint("tenant-", i%50)})
			}
			sent := int64(0)
			start := time.Now()
			for b.Loop() {
				for chunk := range slices.Chunk(batch, 10) {
					_, err := jobs.SendBatch(context.Background(), queue.URL, chunk)
					require.NoError(b, err)
				}
				sent += round
				testenv.Eventually(b, 120*time.Second, "every job handled", func() bool { return handled.Load() == sent })
			}
			elapsed := time.Since(start)
			var deferred int64
			for _, server := range servers {
				deferred += server.Stats().Deferred
			}
			b.ReportMetric(float64(sent)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(api.calls.Load())/float64(sent), "ddb_calls/job")
			b.ReportMetric(float64(deferred)/float64(sent), "deferrals/job")
		})
	}
}
