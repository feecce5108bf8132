package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// message returns a message of a job as the producer sends it (job id, no idempotency
// key), delivered for the receiveCount-th time.
func message(t *testing.T, id string, receiveCount int) *sqsworker.Message {
	t.Helper()
	return &sqsworker.Message{
		ID: "m-" + id, Body: `{"n":1}`, ReceiveCount: receiveCount, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
		MessageAttributes: map[string]sqsworker.MessageAttribute{sqsworker.AttributeJobID: {DataType: "String", StringValue: id}},
	}
}

// TestEmulatorWritesPerJob counts the DynamoDB calls of one job through a wrapped client
// on moto, for each way of recording it: the figures of docs/benchmarks.md ("Job
// records").
func TestEmulatorWritesPerJob(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	succeed := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		return jobs.SetResult(ctx, map[string]int{"sent": 1})
	})
	failOnce := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if m.ReceiveCount == 1 {
			return errors.New("downstream 503")
		}
		return nil
	})
	type setup struct {
		name        string
		handler     sqsworker.Handler
		idempotency bool
		records     bool
		inRecord    bool
		attempts    int
		wantWrites  int
		wantReads   int
	}
	for _, c := range []setup{
		{name: "idempotency alone", handler: succeed, idempotency: true, attempts: 1, wantWrites: 2},
		{name: "records alone", handler: succeed, records: true, attempts: 1, wantWrites: 2},
		{name: "idempotency and records in their own item", handler: succeed, idempotency: true, records: true, attempts: 1, wantWrites: 4},
		{name: "idempotency and records in the idempotency record", handler: succeed, idempotency: true, records: true, inRecord: true, attempts: 1, wantWrites: 2, wantReads: 1},
		{name: "records alone, one failed attempt then success", handler: failOnce, records: true, attempts: 2, wantWrites: 4},
		{name: "idempotency, records in its record, one failed attempt then success", handler: failOnce, idempotency: true, records: true, inRecord: true, attempts: 2, wantWrites: 4, wantReads: 2},
	} {
		api := newCountingAPI(client)
		idemStore := idempotency.NewDynamoDBStore(api, tableName)
		config := jobs.Config{Table: tableName}
		if c.inRecord {
			config.Idempotency = idemStore
		}
		store, err := jobs.NewStore(api, config)
		require.NoError(t, err)
		var middlewares []sqsworker.Middleware
		if c.idempotency {
			middlewares = append(middlewares, idempotency.Middleware(idemStore, idempotency.Config{}))
		}
		if c.records {
			middlewares = append(middlewares, store.Middleware(jobs.MiddlewareConfig{InIdempotencyRecord: c.inRecord}))
		}
		handler := sqsworker.Chain(c.handler, middlewares...)
		id := producer.NewJobID()
		for attempt := 1; attempt <= c.attempts; attempt++ {
			err := handler.Handle(context.Background(), message(t, id, attempt))
			assert.Equal(t, attempt == c.attempts, err == nil, "%s: attempt %d: %v", c.name, attempt, err)
		}
		calls := api.snapshot()
		t.Logf("%-70s writes %d (%v)", c.name, api.writes(), calls)
		assert.Equal(t, c.wantWrites, api.writes(), "%s: writes %v", c.name, calls)
		assert.Equal(t, c.wantReads, calls["GetItem"], "%s: reads %v", c.name, calls)
		if c.records {
			r, err := store.Get(context.Background(), id)
			require.NoError(t, err, c.name)
			assert.Equal(t, jobs.StateSucceeded, r.State, c.name)
		}
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestEmulatorChattyProgressWritesAtTheBound: a handler reporting progress 1,000 times
// over 100 s (a fake clock, 100 ms per report) writes it once per 5-second interval, 20
// times, and its end write carries the last report.
func TestEmulatorChattyProgressWritesAtTheBound(t *testing.T) {
	t.Parallel()
	store, api := newStore(t)
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		for i := 1; i <= 1000; i++ {
			if err := jobs.Progress(ctx, map[string]int{"done": i, "of": 1000}); err != nil {
				return err
			}
			clock.Add(100 * time.Millisecond)
		}
		return nil
	})
	id := producer.NewJobID()
	recorded := sqsworker.Chain(handler, store.Middleware(jobs.MiddlewareConfig{Now: clock.Now, ProgressInterval: 5 * time.Second}))
	require.NoError(t, recorded.Handle(context.Background(), message(t, id, 1)))
	calls := api.snapshot()
	assert.Equal(t, 20+2, calls["UpdateItem"], "20 progress writes, the start and the end: %v", calls)
	r, err := store.Get(context.Background(), id)
	require.NoError(t, err)
	assert.JSONEq(t, `{"done":1000,"of":1000}`, string(r.Progress))

	// Bounds: a document over MaxProgressBytes or a result over MaxResultBytes is refused.
	bounded := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		assert.ErrorIs(t, jobs.Progress(ctx, strings.Repeat("p", jobs.MaxProgressBytes)), jobs.ErrProgressTooLarge)
		assert.ErrorIs(t, jobs.SetResult(ctx, strings.Repeat("r", jobs.MaxResultBytes)), jobs.ErrResultTooLarge)
		return fmt.Errorf("%s", strings.Repeat("e", 2*jobs.MaxErrorBytes))
	})
	id = producer.NewJobID()
	require.Error(t, sqsworker.Chain(bounded, store.Middleware(jobs.MiddlewareConfig{})).Handle(context.Background(), message(t, id, 1)))
	r, err = store.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateRetrying, r.State)
	assert.Len(t, r.LastError, jobs.MaxErrorBytes)
	assert.True(t, strings.HasSuffix(r.LastError, "..."))
	assert.ErrorIs(t, jobs.Progress(context.Background(), 1), jobs.ErrNoRecord)
}

// TestEmulatorStatesOfFailedAttempts: a retryable failure is retrying, the same at the
// queue's maxReceiveCount is failed (retries exhausted), a permanent failure is
// dead-lettered, an attempt whose context ended first is interrupted.
func TestEmulatorStatesOfFailedAttempts(t *testing.T) {
	t.Parallel()
	store, _ := newStore(t)
	for _, c := range []struct {
		name         string
		err          error
		receiveCount int
		cancelHost   bool
		want         jobs.State
	}{
		{"retryable", errors.New("503"), 1, false, jobs.StateRetrying},
		{"retries exhausted", errors.New("503"), 3, false, jobs.StateFailed},
		{"permanent", sqsworker.Permanent("Bad", errors.New("bad")), 1, false, jobs.StateDeadLettered},
		{"host context ended", context.Canceled, 1, true, jobs.StateInterrupted},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			if c.cancelHost {
				cancel() // the host shuts down while the handler runs
			}
			return c.err
		})
		id := producer.NewJobID()
		err := sqsworker.Chain(handler, store.Middleware(jobs.MiddlewareConfig{MaxReceiveCount: 3})).Handle(ctx, message(t, id, c.receiveCount))
		cancel()
		require.Error(t, err, c.name)
		r, err := store.Get(context.Background(), id)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, r.State, c.name)
	}
}
