package batches_test

// The idempotency middleware inside the batches middleware: a success is counted with
// its record's completion, and what that changes for copies and for short-lived records.

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// TestEmulatorCopyWithAnotherBodyIsNotCountedDead: a job succeeds, counted with its
// record's completion (no marker). A copy of its message with another body (same job
// id and batch attribute: anyone who may send to the queue can make one) fails
// permanently on the record's payload hash and is dead-lettered; its end is no
// dead-lettered job of the batch, because the count holds a check that the job's
// record is not completed. The batch stays open for its other job, then fires
// success once.
func TestEmulatorCopyWithAnotherBodyIsNotCountedDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	w.startIdempotent(t, e, 5, 4, batches.DefaultRetention)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, []producer.Job{{Type: "work", Payload: work{N: 1}}, {Type: "work", Payload: work{N: 2, Block: true}}})
	e.waitStatus(t, batch.ID(), wait, "the first job counted", func(s batches.Status) bool { return s.Counts.Succeeded == 1 })

	original := w.message(ids[0])
	_, err := e.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue.URL),
		MessageBody: aws.String(`{"N":1,"Children":5}`), MessageAttributes: toSQS(original)})
	require.NoError(t, err)
	letters := testenv.Receive(t, e.sqs, sqsReceive(e.queue.DeadLetterQueueURL), 1, wait)
	require.Len(t, letters, 1)
	assert.Equal(t, idempotency.ReasonPayloadMismatch, aws.ToString(letters[0].MessageAttributes[sqsworker.AttributeFailureReason].StringValue))
	assert.Equal(t, 1, w.calls(ids[0]), "the copy's handler did not run")
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 2, Pending: 1, Succeeded: 1}, status.Counts, "the copy's end is not counted")

	close(w.release)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}

// TestEmulatorShortLivedRecordsKeepMarkers: idempotency records kept 1 h, less than the
// batch's retention, cannot stand for its counts (a copy delivered after they expire
// would be counted again), so each end writes its marker as without the idempotency
// middleware; a duplicate is answered by its record and counts nothing.
func TestEmulatorShortLivedRecordsKeepMarkers(t *testing.T) {
	t.Parallel()
	const n = 5
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	answered := w.startIdempotent(t, e, 5, 4, time.Hour)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(n, nil))
	e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	resend(t, e.sqs, e.queue.URL, w.message(ids[0]))
	testenv.Eventually(t, wait, "the duplicate answered by its record", func() bool { return answered.Load() == 1 })
	testenv.WaitQueueEmpty(t, e.sqs, e.queue.URL, wait)

	_, _, perKey := e.api.snapshot()
	markers := 0
	for key := range perKey {
		if strings.HasPrefix(key, "batch#job#") {
			markers++
		}
	}
	assert.Equal(t, n, markers, "one marker per job")
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}

// resendingAPI sends every TransactWriteItems twice and answers with the second, as
// the SDK does when the first call's response is lost and it retries: the first may
// have been committed.
type resendingAPI struct {
	batches.API
	resent atomic.Int64
}

func (r *resendingAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if _, err := r.API.TransactWriteItems(ctx, in, opts...); err != nil {
		return nil, err
	}
	r.resent.Add(1)
	return r.API.TransactWriteItems(ctx, in, opts...)
}

// TestEmulatorRetriedCompletionCountsOnce: every joined completion is sent twice, the
// first committed and its response lost (resendingAPI): the retry is refused by the
// record's condition (completed now; DynamoDB itself takes the SDK's retries, which
// share a client request token, as one call), the store finds the record completed
// under its own lease, and the success counts once, nothing failed.
func TestEmulatorRetriedCompletionCountsOnce(t *testing.T) {
	t.Parallel()
	const n = 10
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	resending := &resendingAPI{API: e.api}
	_, completeFailed := w.startIdempotentOn(t, e, resending, 5, 4, batches.DefaultRetention)
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(n, nil))
	status := e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n}, status.Counts)
	assert.Equal(t, int64(n), resending.resent.Load(), "every completion was sent twice")
	assert.Zero(t, completeFailed.Load(), "no completion reported failed")
	for _, id := range ids {
		assert.Equal(t, 1, w.calls(id))
	}
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}
