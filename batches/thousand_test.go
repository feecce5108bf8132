package batches_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestEmulatorThousandJobs: a batch of 1,000 jobs on 4 shards, added in 10 calls; 100
// of them fail once and succeed on their retry, one is dead-lettered. complete fires
// once; 20 duplicate deliveries change no count and fire nothing; the dead letter is
// redriven and succeeds, and success fires once; a duplicate of the redriven job
// changes nothing. Run with markers (no idempotency middleware: each end writes its
// marker) and with the idempotency middleware inside, which counts each success with
// its record's completion: the duplicates are answered by the records (their handler
// does not run) and count nothing either.
func TestEmulatorThousandJobs(t *testing.T) {
	t.Parallel()
	t.Run("markers", func(t *testing.T) {
		t.Parallel()
		thousandJobs(t, false)
	})
	t.Run("idempotency", func(t *testing.T) {
		t.Parallel()
		thousandJobs(t, true)
	})
}

func thousandJobs(t *testing.T, idempotent bool) {
	const n, dead = 1000, 500
	e := newEnv(t, 4, 5)
	w := newWorker(t, e.queue.URL)
	var answered *atomic.Int64
	if idempotent {
		answered = w.startIdempotent(t, e, 5, 20, batches.DefaultRetention)
	} else {
		w.start(t, e, 5, 20)
	}
	batch := e.open(t)
	jobs := jobsOf(n, func(i int, j *work) {
		j.FailTimes = map[bool]int{true: 1}[i%10 == 3]
		j.DeadOnce = i == dead
	})
	var ids []string
	for start := 0; start < n; start += 100 {
		added, err := batch.Add(context.Background(), e.queue.URL, jobs[start:start+100]...)
		require.NoError(t, err)
		ids = append(ids, added...)
	}
	require.NoError(t, batch.Seal(context.Background()))

	status := e.waitStatus(t, batch.ID(), 3*wait, "complete fired", completeFired)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n - 1, DeadLettered: 1}, status.Counts)
	for _, shard := range status.Shards {
		assert.Greater(t, shard.Added, int64(200), "each shard has its share of 1,000 jobs")
	}
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1}, e.settled(t))
	assert.Equal(t, 2, w.calls(ids[3]), "failed once, then succeeded")

	var answeredBefore int64
	if idempotent {
		answeredBefore = answered.Load()
	}
	for i := range 20 {
		resend(t, e.sqs, e.queue.URL, w.message(ids[i*37]))
	}
	testenv.Eventually(t, wait, "the duplicates handled", func() bool {
		if idempotent {
			return answered.Load() == answeredBefore+20
		}
		handled := 0
		for i := range 20 {
			handled += w.calls(ids[i*37])
		}
		return handled >= 20+20+2 // each once before, once now; 37*k%10==3 for k=9 and 19: one retry each
	})
	testenv.WaitQueueEmpty(t, e.sqs, e.queue.URL, wait)
	for i := range 20 {
		// A job that fails once ran twice; its copy, a new message, fails once more too
		// when its handler runs.
		want := 1
		if i*37%10 == 3 {
			want = 2
		}
		if !idempotent {
			want *= 2
		}
		assert.Equal(t, want, w.calls(ids[i*37]), "job %d", i*37)
	}
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n - 1, DeadLettered: 1}, status.Counts, "duplicates count nothing")
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1}, e.settled(t))

	redriveAll(t, e, 1)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n}, status.Counts)
	if idempotent {
		answeredBefore = answered.Load()
	}
	resend(t, e.sqs, e.queue.URL, w.message(ids[dead]))
	testenv.Eventually(t, wait, "the redriven job's duplicate handled", func() bool {
		if idempotent {
			return answered.Load() == answeredBefore+1
		}
		return w.calls(ids[dead]) == 3
	})
	assert.Equal(t, map[bool]int{true: 2, false: 3}[idempotent], w.calls(ids[dead]), "the copy of the redriven job is answered by its record")
	testenv.WaitQueueEmpty(t, e.sqs, e.queue.URL, wait)
	status, err = e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1, batch.ID() + ":success": 1}, e.settled(t))
}
