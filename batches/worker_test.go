package batches_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/producer"
)

// work is a test job: how it behaves is in its payload.
type work struct {
	N int
	// FailTimes fails the first FailTimes attempts (retried at once).
	FailTimes int
	// DeadOnce fails permanently the first time it is handled (dead-lettered); a
	// redriven copy then succeeds.
	DeadOnce bool
	// Children adds that many jobs to the job's own batch before returning.
	Children int
	// Block waits for the worker's release channel before returning.
	Block bool
}

// worker handles work jobs and remembers what it saw.
type worker struct {
	t       *testing.T
	queue   string
	release chan struct{}

	mu       sync.Mutex
	handled  map[string]int                // job id -> handler calls
	messages map[string]*sqsworker.Message // job id -> a copy of its last message
	dead     map[string]bool               // job ids dead-lettered once
}

func newWorker(t *testing.T, queue string) *worker {
	return &worker{t: t, queue: queue, release: make(chan struct{}), handled: map[string]int{}, messages: map[string]*sqsworker.Message{}, dead: map[string]bool{}}
}

func (w *worker) Handle(ctx context.Context, message *sqsworker.Message) error {
	var job work
	if err := json.Unmarshal([]byte(message.Body), &job); err != nil {
		return sqsworker.Permanent("BadBody", err)
	}
	id := message.JobID()
	w.mu.Lock()
	w.handled[id]++
	copied := *message
	w.messages[id] = &copied
	deadNow := job.DeadOnce && !w.dead[id]
	if deadNow {
		w.dead[id] = true
	}
	w.mu.Unlock()
	if job.Block {
		select {
		case <-w.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if message.ReceiveCount <= job.FailTimes {
		return sqsworker.RetryAfter(0, fmt.Errorf("job %d: attempt %d fails", job.N, message.ReceiveCount))
	}
	if deadNow {
		return sqsworker.Permanent("TestDead", errors.New("dead once"))
	}
	if job.Children > 0 {
		batch, ok := batches.FromContext(ctx)
		if !ok {
			return sqsworker.Permanent("NoBatch", errors.New("no batch in the context"))
		}
		children := make([]producer.Job, job.Children)
		for i := range children {
			children[i] = producer.Job{Type: "work", Payload: work{N: 1000*job.N + i, Block: true}}
		}
		if _, err := batch.Add(ctx, w.queue, children...); err != nil {
			return err
		}
	}
	return nil
}

func (w *worker) calls(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.handled[id]
}

func (w *worker) message(id string) *sqsworker.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.messages[id]
}

// start runs the worker on the env's job queue behind the batches middleware.
func (w *worker) start(t *testing.T, e *env, maxReceiveCount, concurrency int) {
	startPoller(t, e.sqs, e.queue.URL, concurrency, sqsworker.Chain(w, e.b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: maxReceiveCount})))
}

// startIdempotent runs the worker behind the batches middleware and, inside it, the
// idempotency middleware on the env's table (through the env's counting client), its
// records kept for ttl (batches.DefaultRetention, the batches' own: the completion
// counts each success). It returns the count of deliveries a completed record answered.
func (w *worker) startIdempotent(t *testing.T, e *env, maxReceiveCount, concurrency int, ttl time.Duration) *atomic.Int64 {
	answered, _ := w.startIdempotentOn(t, e, e.api, maxReceiveCount, concurrency, ttl)
	return answered
}

// startIdempotentOn is startIdempotent with the idempotency store on api; it also
// returns the count of completions that failed.
func (w *worker) startIdempotentOn(t *testing.T, e *env, api batches.API, maxReceiveCount, concurrency int, ttl time.Duration) (answered, completeFailed *atomic.Int64) {
	answered, completeFailed = &atomic.Int64{}, &atomic.Int64{}
	store := idempotency.NewDynamoDBStore(api, e.table)
	inside := idempotency.Middleware(store, idempotency.Config{
		TTL: ttl, Logger: slog.New(slog.DiscardHandler),
		Observer: idempotency.ObserverFunc(func(_ context.Context, ev idempotency.Event) {
			switch ev.Kind {
			case idempotency.EventCompletedDuplicate:
				answered.Add(1)
			case idempotency.EventCompleteFailed:
				completeFailed.Add(1)
			}
		}),
	})
	startPoller(t, e.sqs, e.queue.URL, concurrency, sqsworker.Chain(w, e.b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: maxReceiveCount}), inside))
	return answered, completeFailed
}

// jobsOf returns n work jobs numbered from 0, each changed by with (if not nil).
func jobsOf(n int, with func(i int, w *work)) []producer.Job {
	out := make([]producer.Job, n)
	for i := range out {
		job := work{N: i}
		if with != nil {
			with(i, &job)
		}
		out[i] = producer.Job{Type: "work", Payload: job}
	}
	return out
}

func addAndSeal(t *testing.T, e *env, batch *batches.Batch, jobs []producer.Job) []string {
	t.Helper()
	ids, err := batch.Add(context.Background(), e.queue.URL, jobs...)
	require.NoError(t, err)
	require.NoError(t, batch.Seal(context.Background()))
	return ids
}
