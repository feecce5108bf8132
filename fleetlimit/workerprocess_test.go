package fleetlimit_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
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
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// A worker process of TestThreeWorkerProcessesKeepAPerTenantLimitOfTwo and
// TestThreeWorkerProcessesShareARateAndATenantLimit: this test binary again, with these
// variables set (workerOptions).
const (
	envWorkerTable      = "FLEETLIMIT_TEST_WORKER_TABLE" // set: this process is a worker
	envWorkerQueue      = "FLEETLIMIT_TEST_WORKER_QUEUE"
	envWorkerDownstream = "FLEETLIMIT_TEST_WORKER_DOWNSTREAM"
	envWorkerHolder     = "FLEETLIMIT_TEST_WORKER_HOLDER"
	// envWorkerRate, when set, adds a rate of that many starts a second shared over
	// every job (RateKey "all", MaxWait workerMaxWait) to the per-tenant limit.
	envWorkerRate     = "FLEETLIMIT_TEST_WORKER_RATE"
	workerBanner      = "fleetlimit worker: polling"
	workerStatsFormat = "fleetlimit worker: deferred=%d failed=%d dead=%d hopped=%d"
	// workerMaxReceiveCount is the queue's maxReceiveCount and the limiter's.
	workerMaxReceiveCount = 4
	// workerMaxWait is how long a job waits in its worker for a rate start.
	workerMaxWait = 3 * time.Second
)

// workerOptions are a worker process's settings, passed in its environment.
type workerOptions struct {
	table, queueURL, downstreamURL, holder string
	// rate, if not zero, is the starts a second shared over every job of every worker.
	rate float64
}

// environment returns o as the worker's environment variables.
func (o workerOptions) environment() []string {
	env := []string{envWorkerTable + "=" + o.table, envWorkerQueue + "=" + o.queueURL,
		envWorkerDownstream + "=" + o.downstreamURL, envWorkerHolder + "=" + o.holder}
	if o.rate != 0 {
		env = append(env, envWorkerRate+"="+strconv.FormatFloat(o.rate, 'g', -1, 64))
	}
	return env
}

// workerOptionsFromEnvironment reads what environment wrote.
func workerOptionsFromEnvironment() (workerOptions, error) {
	o := workerOptions{table: os.Getenv(envWorkerTable), queueURL: os.Getenv(envWorkerQueue),
		downstreamURL: os.Getenv(envWorkerDownstream), holder: os.Getenv(envWorkerHolder)}
	if rate := os.Getenv(envWorkerRate); rate != "" {
		var err error
		if o.rate, err = strconv.ParseFloat(rate, 64); err != nil {
			return o, fmt.Errorf("%s: %w", envWorkerRate, err)
		}
	}
	return o, nil
}

// limiterConfig is the worker's limit: 2 at once per tenant (the message group), and
// with o.rate that many starts a second over every job.
func (o workerOptions) limiterConfig(hopper sqsworker.Hopper) fleetlimit.Config {
	config := fleetlimit.Config{
		Table: o.table, Name: "tenants", Concurrency: 2, Lease: 10 * time.Second,
		Key:        func(m *sqsworker.Message) string { return m.GroupID },
		RetryDelay: time.Second, Hopper: hopper, MaxReceiveCount: workerMaxReceiveCount,
		Holder: o.holder,
	}
	if o.rate != 0 {
		config.Rate, config.MaxWait = o.rate, workerMaxWait
		config.RateKey = func(*sqsworker.Message) string { return "all" }
	}
	return config
}

// runWorkerProcess runs one poller whose jobs call the downstream (recording the job's
// body) under the limits of workerOptions, until SIGTERM; then it drains and prints
// its counts.
func runWorkerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "fleetlimit worker:", err)
		return 2
	}
	options, err := workerOptionsFromEnvironment()
	if err != nil {
		return fail(err)
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
	limiter, err := fleetlimit.New(dynamodb.NewFromConfig(cfg), options.limiterConfig(hopper))
	if err != nil {
		return fail(err)
	}
	var hopped atomic.Int64
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if err := callDownstream(ctx, options.downstreamURL, m.GroupID, m.Body); err != nil {
			return err
		}
		if fleetlimit.PriorReceives(m) > 0 {
			hopped.Add(1)
		}
		return nil
	})
	server, err := poller.New(sqsClient, poller.Config{QueueURL: options.queueURL, Concurrency: 8, WaitTime: time.Second, Logger: discard},
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
func startWorkerProcess(t *testing.T, options workerOptions) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), options.environment()...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &workerProcess{cmd: cmd, lines: bufio.NewScanner(stdout), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.True(t, w.lines.Scan() && w.lines.Text() == workerBanner, "worker %s started; stderr: %s", options.holder, w.stderr.String())
	return w
}

// workerCounts are a stopped worker's counts.
type workerCounts struct{ deferred, failed, dead, hopped int64 }

// stop sends SIGTERM, waits for the drain and returns the worker's counts.
func (w *workerProcess) stop(t *testing.T) workerCounts {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	var counts workerCounts
	found := false
	for w.lines.Scan() {
		if _, err := fmt.Sscanf(w.lines.Text(), workerStatsFormat, &counts.deferred, &counts.failed, &counts.dead, &counts.hopped); err == nil {
			found = true
		}
	}
	require.NoError(t, w.cmd.Wait(), "the worker drained and exited 0; stderr: %s", w.stderr.String())
	require.True(t, found, "the worker printed its counts; stderr: %s", w.stderr.String())
	return counts
}

// stopWorkers stops every worker and returns their counts added up; each asserts it
// failed and dead-lettered nothing.
func stopWorkers(t *testing.T, workers []*workerProcess) workerCounts {
	t.Helper()
	var total workerCounts
	for _, w := range workers {
		counts := w.stop(t)
		assert.Zero(t, counts.failed, "a deferral is not a failure")
		assert.Zero(t, counts.dead)
		total.deferred += counts.deferred
		total.failed += counts.failed
		total.dead += counts.dead
		total.hopped += counts.hopped
	}
	return total
}

// handledOnce asserts that the downstream served each job's body exactly once, and
// nothing else.
func handledOnce(t *testing.T, calls []call, jobs []producer.Job) {
	t.Helper()
	handled := map[string]int{}
	for _, c := range calls {
		handled[c.job]++
	}
	for _, job := range jobs {
		assert.Equal(t, 1, handled[job.Body], "%s handled exactly once by the downstream", job.Body)
	}
	assert.Len(t, calls, len(jobs), "one call a job")
}
