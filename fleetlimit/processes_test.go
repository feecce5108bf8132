package fleetlimit_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// A worker process of TestThreeWorkerProcessesKeepAPerTenantLimitOfTwo: this test binary
// again, with these variables set.
const (
	envWorkerTable      = "FLEETLIMIT_TEST_WORKER_TABLE" // set: this process is a worker
	envWorkerQueue      = "FLEETLIMIT_TEST_WORKER_QUEUE"
	envWorkerDownstream = "FLEETLIMIT_TEST_WORKER_DOWNSTREAM"
	envWorkerHolder     = "FLEETLIMIT_TEST_WORKER_HOLDER"
	workerBanner        = "fleetlimit worker: polling"
	workerStatsFormat   = "fleetlimit worker: deferred=%d failed=%d dead=%d hopped=%d"
	// workerMaxReceiveCount is the queue's maxReceiveCount and the limiter's.
	workerMaxReceiveCount = 4
)

// runWorkerProcess runs one poller whose jobs call the downstream under a per-tenant
// limit of 2 (the tenant is the message group), until SIGTERM; then it drains and
// prints its counts.
func runWorkerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "fleetlimit worker:", err)
		return 2
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fail(err)
	}
	sqsClient := sqs.NewFromConfig(cfg)
	discard := slog.New(slog.DiscardHandler)
	hopper, err := producer.New(sqsClient, producer.Config{Logger: discard})
	if err != nil {
		return fail(err)
	}
	limiter, err := fleetlimit.New(dynamodb.NewFromConfig(cfg), fleetlimit.Config{
		Table: os.Getenv(envWorkerTable), Name: "tenants", Concurrency: 2, Lease: 10 * time.Second,
		Key:        func(m *sqsworker.Message) string { return m.GroupID },
		RetryDelay: time.Second, Hopper: hopper, MaxReceiveCount: workerMaxReceiveCount,
		Holder: os.Getenv(envWorkerHolder),
	})
	if err != nil {
		return fail(err)
	}
	downstreamURL := os.Getenv(envWorkerDownstream)
	var hopped atomic.Int64
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if err := callDownstream(ctx, downstreamURL, m.GroupID, m.Body); err != nil {
			return err
		}
		if fleetlimit.PriorReceives(m) > 0 {
			hopped.Add(1)
		}
		return nil
	})
	server, err := poller.New(sqsClient, poller.Config{QueueURL: os.Getenv(envWorkerQueue), Concurrency: 8, WaitTime: time.Second, Logger: discard},
		sqsworker.Chain(handler, limiter.Middleware()))
	if err != nil {
		return fail(err)
	}
	if err := server.Start(context.Background()); err != nil {
		return fail(err)
	}
	fmt.Println(workerBanner)
	<-ctx.Done()
	drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(drain); err != nil {
		return fail(err)
	}
	stats := server.Stats()
	fmt.Printf(workerStatsFormat+"\n", stats.Deferred, stats.Failed, stats.DeadLettered, hopped.Load())
	return 0
}

// workerProcess is a started worker process and its stdout.
type workerProcess struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	stderr *strings.Builder
}

// startWorkerProcess starts a worker process and waits for it to poll.
func startWorkerProcess(t *testing.T, tableName, queueURL, downstreamURL, holder string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorkerTable+"="+tableName, envWorkerQueue+"="+queueURL,
		envWorkerDownstream+"="+downstreamURL, envWorkerHolder+"="+holder)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &workerProcess{cmd: cmd, lines: bufio.NewScanner(stdout), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.True(t, w.lines.Scan() && w.lines.Text() == workerBanner, "worker %s started; stderr: %s", holder, w.stderr.String())
	return w
}

// stop sends SIGTERM, waits for the drain and returns the worker's counts.
func (w *workerProcess) stop(t *testing.T) (deferred, failed, dead, hopped int64) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	found := false
	for w.lines.Scan() {
		if _, err := fmt.Sscanf(w.lines.Text(), workerStatsFormat, &deferred, &failed, &dead, &hopped); err == nil {
			found = true
		}
	}
	require.NoError(t, w.cmd.Wait(), "the worker drained and exited 0; stderr: %s", w.stderr.String())
	require.True(t, found, "the worker printed its counts; stderr: %s", w.stderr.String())
	return deferred, failed, dead, hopped
}

// Three worker processes (this test binary again, each with its own limiter, DynamoDB
// client and holder name: the permits' only shared state is the table) share a
// per-tenant limit of 2 under 50 tenants, one of them hot (LocalStack or ElasticMQ,
// moto). The downstream's own timestamps show no tenant ever served more than 2 calls
// at once, and the hot tenant reached 2 (the limit binds). Every job runs, none is
// dead-lettered: jobs at their last receive but one are re-sent (hops carrying
// prior-receives) instead of being deferred into the DLQ.
func TestThreeWorkerProcessesKeepAPerTenantLimitOfTwo(t *testing.T) {
	t.Parallel()
	sqsClient := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, dynamo)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{MaxReceiveCount: workerMaxReceiveCount})
	jobsProducer, err := producer.New(sqsClient, producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	service := newDownstream(t, 150*time.Millisecond)

	var workers []*workerProcess
	for i := range 3 {
		workers = append(workers, startWorkerProcess(t, tableName, queue.URL, service.server.URL, fmt.Sprintf("worker-%d", i)))
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
		_, err := jobsProducer.SendBatch(context.Background(), queue.URL, batch)
		require.NoError(t, err)
	}
	handled := func() map[string]int {
		done := map[string]int{}
		for _, c := range service.recorded() {
			done[c.job]++
		}
		return done
	}
	testenv.Eventually(t, 120*time.Second, "every job handled", func() bool { return len(handled()) == len(jobs) })
	testenv.WaitQueueEmpty(t, sqsClient, queue.URL, 30*time.Second)

	var deferred, hopped int64
	for _, w := range workers {
		d, failed, dead, h := w.stop(t)
		deferred += d
		hopped += h
		assert.Zero(t, failed, "a deferral is not a failure")
		assert.Zero(t, dead)
	}
	overlap := maxOverlap(service.recorded())
	for key, most := range overlap {
		assert.LessOrEqual(t, most, 2, "tenant %s: at most 2 calls at once by the downstream's clock", key)
	}
	assert.Equal(t, 2, overlap["hot"], "the hot tenant reached its limit")
	assert.Len(t, overlap, 51)
	for _, job := range jobs {
		assert.Positive(t, handled()[job.Body], "%s handled", job.Body)
	}
	visible, inFlight := testenv.Counts(t, sqsClient, queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "no healthy job dead-lettered")
	assert.Positive(t, deferred, "the limit deferred jobs")
	t.Logf("%d jobs over 3 processes, %d deferrals, %d handled after a hop", len(jobs), deferred, hopped)
}
