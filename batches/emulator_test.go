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
