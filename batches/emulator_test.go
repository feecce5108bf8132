package batches_test

// Batch semantics on the local services (an SQS emulator, moto DynamoDB), through the
// poller: each case counts the callbacks fired, exactly.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

const wait = 60 * time.Second

func successFired(s batches.Status) bool  { return !s.Success.FiredAt.IsZero() }
func completeFired(s batches.Status) bool { return !s.Complete.FiredAt.IsZero() }

// TestEmulatorAllSucceedFiresSuccessOnce: five jobs succeed: the success callback is
// sent once, complete never; a duplicate delivery of a job and a second Seal change
// nothing.
func TestEmulatorAllSucceedFiresSuccessOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 5)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(5, nil))
	status := e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 5, Pending: 0, Succeeded: 5}, status.Counts)
	assert.True(t, status.Complete.FiredAt.IsZero())

	resend(t, e.sqs, e.queue.URL, w.message(ids[0]))
	testenv.Eventually(t, wait, "the duplicate handled", func() bool { return w.calls(ids[0]) == 2 })
	testenv.WaitQueueEmpty(t, e.sqs, e.queue.URL, wait)
	require.NoError(t, batch.Seal(context.Background()))

	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 5, Pending: 0, Succeeded: 5}, status.Counts)
}

// TestEmulatorRetryThenSuccessCountsOnce: jobs that fail twice and then succeed count
// once each, as succeeded; only success fires.
func TestEmulatorRetryThenSuccessCountsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 5)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(4, func(i int, j *work) { j.FailTimes = 2 * (i % 2) }))
	status := e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 4, Succeeded: 4}, status.Counts)
	assert.Equal(t, 3, w.calls(ids[1]), "the job failed twice, then succeeded")
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}

// TestEmulatorDeadLetterFiresComplete: one job of three fails permanently (the poller
// dead-letters it) and one exhausts its retries: complete fires once, success never.
func TestEmulatorDeadLetterFiresComplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 3)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 3, 5)
	batch := e.open(t)
	addAndSeal(t, e, batch, jobsOf(3, func(i int, j *work) {
		j.DeadOnce = i == 0
		if i == 1 {
			j.FailTimes = 100 // every attempt fails: the third is the last
		}
	}))
	status := e.waitStatus(t, batch.ID(), wait, "complete fired", completeFired)
	assert.Equal(t, batches.Counts{Added: 3, Succeeded: 1, DeadLettered: 2}, status.Counts)
	assert.True(t, status.Success.FiredAt.IsZero())
	testenv.Receive(t, e.sqs, sqsReceive(e.queue.DeadLetterQueueURL), 2, wait)
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1}, e.settled(t))
}

// TestEmulatorRedriveTurnsCompleteIntoSuccess: a dead-lettered job redriven from the
// dead-letter queue succeeds: the batch, complete already, fires success once too.
func TestEmulatorRedriveTurnsCompleteIntoSuccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 5)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(3, func(i int, j *work) { j.DeadOnce = i == 2 }))
	status := e.waitStatus(t, batch.ID(), wait, "complete fired", completeFired)
	assert.Equal(t, batches.Counts{Added: 3, Succeeded: 2, DeadLettered: 1}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1}, e.settled(t))

	redriveAll(t, e, 1)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 3, Succeeded: 3}, status.Counts)
	assert.Equal(t, 2, w.calls(ids[2]))
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1, batch.ID() + ":success": 1}, e.settled(t))
}

// TestEmulatorChildKeepsBatchOpen: a job adds a child to its own batch and returns; the
// child blocks. The batch is not finished while the child runs (its count was raised
// before its send, and before its parent ended); success fires once it ends.
func TestEmulatorChildKeepsBatchOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 5)
	batch := e.open(t)
	addAndSeal(t, e, batch, jobsOf(1, func(i int, j *work) { j.Children = 1 }))
	status := e.waitStatus(t, batch.ID(), wait, "the parent succeeded", func(s batches.Status) bool { return s.Succeeded == 1 })
	assert.Equal(t, batches.Counts{Added: 2, Pending: 1, Succeeded: 1}, status.Counts)
	assert.True(t, status.Success.FiredAt.IsZero(), "the child still runs")
	assert.Empty(t, e.fired.snapshot())
	close(w.release)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}

// TestEmulatorEmptyBatchFiresAtOnce: sealing a batch without jobs sends its success
// callback within Seal.
func TestEmulatorEmptyBatchFiresAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, 5)
	batch := e.open(t)
	require.NoError(t, batch.Seal(context.Background()))
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.False(t, status.Success.FiredAt.IsZero(), "fired within Seal")
	assert.Equal(t, batches.Counts{}, status.Counts)
	require.NoError(t, batch.Seal(context.Background()))
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}
