package jobs_test

// Job records on the local services (SQS emulator, moto DynamoDB), on both hosts.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/redrive"
)

// send sends one job through a producer and returns its job id.
func send(t *testing.T, client *sqs.Client, queueURL string, job producer.Job) string {
	t.Helper()
	p, err := producer.New(client, producer.Config{})
	require.NoError(t, err)
	prepared, err := producer.Prepare(queueURL, job)
	require.NoError(t, err)
	_, err = p.SendPrepared(context.Background(), prepared)
	require.NoError(t, err)
	return prepared.JobID()
}

// waitState waits until job id's record is in state want, and returns it.
func waitState(t *testing.T, store *jobs.Store, id string, want jobs.State, timeout time.Duration) jobs.Record {
	t.Helper()
	var r jobs.Record
	testenv.Eventually(t, timeout, "job "+id+" "+string(want), func() bool {
		var err error
		r, err = store.Get(context.Background(), id)
		return err == nil && r.State == want
	})
	return r
}

// TestEmulatorRecordFollowsTheJob: a job retried once, dead-lettered (permanent
// failure), redriven and then succeeding: its record shows each state in turn, the
// attempts, the start times, the last error, the result and the progress, on both hosts.
func TestEmulatorRecordFollowsTheJob(t *testing.T) {
	t.Parallel()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 5 * time.Second, MaxReceiveCount: 5})
			store, _ := newStore(t)
			var calls atomic.Int32
			release := make(chan struct{})
			mux := sqsworker.NewServeMux()
			sqsworker.RegisterJSON(mux, "report", func(ctx context.Context, job struct{ Month string }) error {
				switch calls.Add(1) {
				case 1:
					return sqsworker.RetryAfter(0, errors.New("database busy"))
				case 2:
					return sqsworker.Permanent("BadMonth", errors.New("no such month"))
				}
				require.NoError(t, jobs.Progress(ctx, map[string]int{"done": 1, "of": 2}))
				<-release                                                                  // the test reads the running state
				require.NoError(t, jobs.Progress(ctx, map[string]int{"done": 2, "of": 2})) // within the interval: written with the end
				return jobs.SetResult(ctx, map[string]string{"url": "s3://reports/2026-11.pdf"})
			})
			h.start(t, client, queue.URL, sqsworker.Chain(mux, store.Middleware(jobs.MiddlewareConfig{})))

			id := send(t, client, queue.URL, producer.Job{Type: "report", Payload: map[string]string{"Month": "2026-11"}})
			dead := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.DeadLetterQueueURL), VisibilityTimeout: 0}, 1, 60*time.Second)
			require.Len(t, dead, 1)
			r := waitState(t, store, id, jobs.StateDeadLettered, 10*time.Second)
			assert.Equal(t, 2, r.Attempts)
			assert.Contains(t, r.LastError, "no such month")
			assert.Equal(t, "report", r.Type)
			first := r.FirstStartedAt
			assert.False(t, first.IsZero())
			assert.False(t, r.LastStartedAt.Before(first))

			mover, err := redrive.NewMover(client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
			require.NoError(t, err)
			result, err := mover.Run(context.Background())
			require.NoError(t, err)
			require.Equal(t, 1, result.Moved)

			r = waitState(t, store, id, jobs.StateRunning, 30*time.Second)
			assert.Equal(t, 3, r.Attempts)
			assert.JSONEq(t, `{"done":1,"of":2}`, string(r.Progress))
			close(release)
			r = waitState(t, store, id, jobs.StateSucceeded, 30*time.Second)
			assert.Equal(t, 3, r.Attempts)
			assert.Equal(t, first, r.FirstStartedAt, "the first start is kept")
			assert.JSONEq(t, `{"url":"s3://reports/2026-11.pdf"}`, string(r.Result))
			assert.JSONEq(t, `{"done":2,"of":2}`, string(r.Progress))
			testenv.WaitQueueEmpty(t, client, queue.URL, 30*time.Second)
		})
	}
}

// TestEmulatorCancelBeforeStart: a job cancelled while it waits in the queue (delayed)
// does not run when it arrives; its message is deleted, not dead-lettered.
func TestEmulatorCancelBeforeStart(t *testing.T) {
	t.Parallel()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			store, _ := newStore(t)
			var ran atomic.Int32
			handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
				ran.Add(1)
				return nil
			})
			id := send(t, client, queue.URL, producer.Job{Body: "charge o-42", Delay: 2 * time.Second})
			r, err := store.Cancel(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, jobs.StateCancelled, r.State)
			h.start(t, client, queue.URL, sqsworker.Chain(handler, store.Middleware(jobs.MiddlewareConfig{})))

			testenv.Eventually(t, 30*time.Second, "the message delivered and deleted", func() bool {
				visible, inFlight := testenv.Counts(t, client, queue.URL)
				delayed := testenv.QueueAttributes(t, client, queue.URL)["ApproximateNumberOfMessagesDelayed"]
				return visible == 0 && inFlight == 0 && delayed == "0"
			})
			assert.Zero(t, ran.Load(), "a cancelled job does not run")
			visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
			assert.Zero(t, visible, "not dead-lettered")
			r, err = store.Get(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, jobs.StateCancelled, r.State)
			assert.Zero(t, r.Attempts)
		})
	}
}

// TestEmulatorCancelWhileRunning: a running job's context is cancelled within one check
// interval of the request; the job ends cancelled (its effect not done), its message is
// deleted, neither retried nor dead-lettered; cancelling it again says it has finished.
func TestEmulatorCancelWhileRunning(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			store, _ := newStore(t)
			started := make(chan struct{})
			var mu sync.Mutex
			var stoppedAfter time.Duration
			var effects, runs atomic.Int32
			var requested time.Time
			handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
				runs.Add(1)
				close(started)
				select {
				case <-ctx.Done():
					mu.Lock()
					stoppedAfter = time.Since(requested)
					mu.Unlock()
					assert.ErrorIs(t, context.Cause(ctx), sqsworker.ErrCancelled)
					return ctx.Err()
				case <-time.After(time.Minute):
					effects.Add(1) // the effect a cancellation must prevent
					return nil
				}
			})
			h.start(t, client, queue.URL, sqsworker.Chain(handler, store.Middleware(jobs.MiddlewareConfig{CheckInterval: interval})))
			id := send(t, client, queue.URL, producer.Job{Body: "export everything"})
			testenv.Recv(t, started, 30*time.Second, "the job started")
			waitState(t, store, id, jobs.StateRunning, 5*time.Second)
			// The clock starts once the request is written: the write itself may wait
			// behind other tests' calls on the serialized moto (it took 3 s once).
			mu.Lock()
			r, err := store.Cancel(context.Background(), id)
			requested = time.Now()
			mu.Unlock()
			require.NoError(t, err)
			assert.Equal(t, jobs.StateRunning, r.State)
			assert.True(t, r.CancelRequested)

			r = waitState(t, store, id, jobs.StateCancelled, 10*time.Second)
			mu.Lock()
			// One check interval, plus the check's own read, which a loaded serialized
			// moto may hold for a second (milliseconds on DynamoDB).
			assert.LessOrEqual(t, stoppedAfter, interval+1500*time.Millisecond, "cancelled within one check interval (and a read)")
			mu.Unlock()
			testenv.WaitQueueEmpty(t, client, queue.URL, 30*time.Second)
			visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
			assert.Zero(t, visible, "not dead-lettered")
			assert.Zero(t, effects.Load(), "the effect was not done")
			assert.Equal(t, int32(1), runs.Load(), "not retried")

			_, err = store.Cancel(context.Background(), id)
			var finished *jobs.FinishedError
			require.ErrorAs(t, err, &finished)
			assert.ErrorIs(t, err, jobs.ErrFinished)
			assert.Equal(t, jobs.StateCancelled, finished.Record.State)
		})
	}
}

// TestEmulatorCancelledHandlerThatReturnsNil: a running job whose handler returns nil
// although its context was cancelled by the request (it ignored the context, or
// finished as the request came) has done its work: it ends as succeeded, not cancelled,
// since an idempotency record inside completed and a batch outside counts a success
// (chain_emulator_test.go at the repository root shows the three agree).
func TestEmulatorCancelledHandlerThatReturnsNil(t *testing.T) {
	t.Parallel()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			store, _ := newStore(t)
			started := make(chan struct{})
			var runs atomic.Int32
			handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
				runs.Add(1)
				close(started)
				<-ctx.Done()
				return nil // the work is done all the same
			})
			h.start(t, client, queue.URL, sqsworker.Chain(handler, store.Middleware(jobs.MiddlewareConfig{CheckInterval: 200 * time.Millisecond})))
			id := send(t, client, queue.URL, producer.Job{Body: "export everything"})
			testenv.Recv(t, started, 30*time.Second, "the job started")
			waitState(t, store, id, jobs.StateRunning, 5*time.Second)
			_, err := store.Cancel(context.Background(), id)
			require.NoError(t, err)

			r := waitState(t, store, id, jobs.StateSucceeded, 30*time.Second)
			assert.True(t, r.CancelRequested)
			testenv.WaitQueueEmpty(t, client, queue.URL, 30*time.Second)
			visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
			assert.Zero(t, visible, "not dead-lettered")
			assert.Equal(t, int32(1), runs.Load(), "not retried")
		})
	}
}
