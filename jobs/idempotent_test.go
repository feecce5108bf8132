package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/producer"
)

// TestEmulatorRecordInTheIdempotencyRecord: jobs under the idempotency middleware with
// InIdempotencyRecord, on both hosts. A job's state and result are read from its
// idempotency record (the job id is its key); a job cancelled before it starts does not
// run; a running one is cancelled within the check interval; a finished one cannot be
// cancelled.
func TestEmulatorRecordInTheIdempotencyRecord(t *testing.T) {
	t.Parallel()
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			db := testenv.DynamoDB(t)
			tableName := testenv.NewTable(t, db)
			idemStore := idempotency.NewDynamoDBStore(db, tableName)
			store, err := jobs.NewStore(db, jobs.Config{Table: tableName, Idempotency: idemStore})
			require.NoError(t, err)
			var ran, effects atomic.Int32
			started := make(chan struct{}, 1)
			mux := sqsworker.NewServeMux()
			sqsworker.RegisterJSON(mux, "quick", func(ctx context.Context, job struct{}) error {
				ran.Add(1)
				return jobs.SetResult(ctx, map[string]string{"ok": "yes"})
			})
			sqsworker.RegisterJSON(mux, "slow", func(ctx context.Context, job struct{}) error {
				ran.Add(1)
				started <- struct{}{}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Minute):
					effects.Add(1)
					return nil
				}
			})
			handler := sqsworker.Chain(mux, idempotency.Middleware(idemStore, idempotency.Config{}),
				store.Middleware(jobs.MiddlewareConfig{InIdempotencyRecord: true, CheckInterval: time.Second}))

			cancelled := send(t, client, queue.URL, producer.Job{Type: "quick", Payload: struct{}{}, Delay: 2 * time.Second})
			_, err = store.Cancel(context.Background(), cancelled)
			require.NoError(t, err)
			h.start(t, client, queue.URL, handler)

			done := send(t, client, queue.URL, producer.Job{Type: "quick", Payload: struct{}{}})
			r := waitState(t, store, done, jobs.StateSucceeded, 30*time.Second)
			assert.JSONEq(t, `{"ok":"yes"}`, string(r.Result))
			_, err = store.Cancel(context.Background(), done)
			assert.ErrorIs(t, err, jobs.ErrFinished)

			running := send(t, client, queue.URL, producer.Job{Type: "slow", Payload: struct{}{}})
			testenv.Recv(t, started, 30*time.Second, "the slow job started")
			waitState(t, store, running, jobs.StateRunning, 5*time.Second)
			r, err = store.Cancel(context.Background(), running)
			require.NoError(t, err)
			assert.True(t, r.CancelRequested)
			waitState(t, store, running, jobs.StateCancelled, 10*time.Second)

			testenv.Eventually(t, 30*time.Second, "every message deleted", func() bool {
				visible, inFlight := testenv.Counts(t, client, queue.URL)
				return visible == 0 && inFlight == 0 && testenv.QueueAttributes(t, client, queue.URL)["ApproximateNumberOfMessagesDelayed"] == "0"
			})
			assert.Equal(t, int32(2), ran.Load(), "the quick job and the slow one ran, the cancelled one did not")
			assert.Zero(t, effects.Load())
			visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
			assert.Zero(t, visible, "nothing dead-lettered")
			r, err = store.Get(context.Background(), cancelled)
			require.NoError(t, err)
			assert.Equal(t, jobs.StateCancelled, r.State)
		})
	}
}

// TestEmulatorEnqueuedThenRun: a sender that records the enqueued state; the start keeps
// the enqueued time and counts the first attempt.
func TestEmulatorEnqueuedThenRun(t *testing.T) {
	t.Parallel()
	store, _ := newStore(t)
	id := producer.NewJobID()
	require.NoError(t, store.Enqueue(context.Background(), id, "report", "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"))
	require.NoError(t, store.Enqueue(context.Background(), id, "report", ""), "a second Enqueue leaves the record")
	r, err := store.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateEnqueued, r.State)
	assert.Zero(t, r.Attempts)
	enqueued := r.EnqueuedAt
	require.False(t, enqueued.IsZero())

	recorded := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), store.Middleware(jobs.MiddlewareConfig{}))
	require.NoError(t, recorded.Handle(context.Background(), message(t, id, 1)))
	r, err = store.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, r.State)
	assert.Equal(t, 1, r.Attempts)
	assert.Equal(t, enqueued, r.EnqueuedAt)
}
