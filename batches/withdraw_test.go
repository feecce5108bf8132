package batches_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// failingSender fails the send of the jobs at the given indexes of each batch send.
type failingSender struct {
	*nullSender
	fail map[int]bool
}

func (s *failingSender) SendPreparedBatch(ctx context.Context, messages []producer.Prepared) ([]producer.Result, error) {
	results := make([]producer.Result, len(messages))
	var errs []error
	for i, m := range messages {
		results[i].JobID = m.JobID()
		if s.fail[i] {
			results[i].Err = errors.New("SQS said no")
			errs = append(errs, results[i].Err)
			continue
		}
		results[i].MessageID, _ = s.SendPrepared(ctx, m)
	}
	return results, errors.Join(errs...)
}

// TestEmulatorFailedSendsAreWithdrawn: of three jobs, the send of one fails: Add reports
// it in an *AddError and withdraws it, so the batch does not wait for it; when that job
// turns up anyway (SQS had taken it), its end counts nothing; the batch succeeds once
// the two others end.
func TestEmulatorFailedSendsAreWithdrawn(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	sender := &failingSender{nullSender: &nullSender{unique: map[string]string{}}, fail: map[int]bool{1: true}}
	b, err := batches.New(db, sender, batches.Config{Table: testenv.NewTable(t, db), Shards: 2})
	require.NoError(t, err)
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: producer.Job{Type: "done", Body: "done"}}})
	require.NoError(t, err)
	jobs := jobsOf(3, nil)
	for i := range jobs {
		jobs[i].ID = producer.NewJobID()
	}
	ids, err := batch.Add(ctx, "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobs...)
	addErr, ok := errors.AsType[*batches.AddError](err)
	require.True(t, ok, "%v", err)
	assert.Len(t, addErr.Failed, 1)
	assert.Contains(t, addErr.Failed, 1)
	assert.Equal(t, 1, addErr.Withdrawn)
	assert.Len(t, ids, 3)
	status, err := b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 2, Pending: 2}, status.Counts)
	require.NoError(t, batch.Seal(ctx))

	sent := append([]producer.Prepared(nil), sender.prepared...)
	require.Len(t, sent, 2)
	withdrawn, err := producer.Prepare("https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobs[1])
	require.NoError(t, err)
	withdrawn.Attributes[batches.AttributeBatch] = sent[0].Attributes[batches.AttributeBatch]
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), b.Middleware(batches.MiddlewareConfig{}))
	require.NoError(t, handler.Handle(ctx, message(withdrawn, 1)))
	status, err = b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 2, Pending: 2}, status.Counts, "the withdrawn job counts nothing")
	for _, job := range sent {
		require.NoError(t, handler.Handle(ctx, message(job, 1)))
	}
	status, err = b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, status.Counts)
	assert.False(t, status.Success.FiredAt.IsZero())
	assert.Len(t, sender.prepared, 3, "two jobs and the callback, once")
}

// TestEmulatorAddAfterSuccessIsRefused: once success was sent, Add refuses the batch
// and counts nothing.
func TestEmulatorAddAfterSuccessIsRefused(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	sender := &nullSender{unique: map[string]string{}}
	b, err := batches.New(db, sender, batches.Config{Table: testenv.NewTable(t, db)})
	require.NoError(t, err)
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{})
	require.NoError(t, err)
	require.NoError(t, batch.Seal(ctx)) // empty: finished at once
	_, err = batch.Add(ctx, "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobsOf(1, nil)...)
	assert.ErrorIs(t, err, batches.ErrFinished)
	status, err := b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{}, status.Counts)
	assert.Empty(t, sender.prepared)
}

// flakySender fails its first SendPrepared (a callback's send), then passes on.
type flakySender struct {
	*nullSender
	failed bool
}

func (s *flakySender) SendPrepared(ctx context.Context, m producer.Prepared) (string, error) {
	if !s.failed {
		s.failed = true
		return "", errors.New("SQS unavailable")
	}
	return s.nullSender.SendPrepared(ctx, m)
}

// TestEmulatorFailedCallbackSendIsRetried: the last job's end is counted but the success
// callback's send fails: the middleware returns a retryable error (the job is delivered
// again, as a worker crash between the two would have it), and the redelivery, a
// duplicate that counts nothing, sends the callback, once.
func TestEmulatorFailedCallbackSendIsRetried(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	sender := &flakySender{nullSender: &nullSender{unique: map[string]string{}}}
	b, err := batches.New(db, sender, batches.Config{Table: testenv.NewTable(t, db)})
	require.NoError(t, err)
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: producer.Job{Type: "done", Body: "done"}}})
	require.NoError(t, err)
	_, err = batch.Add(ctx, "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobsOf(1, nil)...)
	require.NoError(t, err)
	require.NoError(t, batch.Seal(ctx))
	job := sender.prepared[0]
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), b.Middleware(batches.MiddlewareConfig{}))

	err = handler.Handle(ctx, message(job, 1))
	require.Error(t, err)
	assert.Equal(t, sqsworker.OutcomeRetry, sqsworker.Classify(err).Kind, "retried, not dead-lettered: %v", err)
	status, err := b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 1, Succeeded: 1}, status.Counts, "counted already")
	assert.True(t, status.Success.FiredAt.IsZero())

	require.NoError(t, handler.Handle(ctx, message(job, 2)))
	status, err = b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 1, Succeeded: 1}, status.Counts)
	assert.False(t, status.Success.FiredAt.IsZero())
	assert.Len(t, sender.prepared, 2, "the job and the callback, once")
}

// TestEmulatorAddFromOutsideAfterSealIsRefused: a batch sealed while its one job runs
// refuses an Add from outside (ErrSealed: counted nothing, sent nothing), through its
// own handle, one loaded before the Seal, and one whose Add read the batch item just
// before the Seal (sealingAPI: the raise's condition check refuses it), while the
// running job adds a child to it; success fires once, after the child.
func TestEmulatorAddFromOutsideAfterSealIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 4)
	batch := e.open(t)
	loaded, err := e.b.Load(context.Background(), batch.ID())
	require.NoError(t, err)
	ids := addAndSeal(t, e, batch, []producer.Job{{Type: "work", Payload: work{N: 1, Children: 1}}})
	e.waitStatus(t, batch.ID(), wait, "the child added", func(s batches.Status) bool { return s.Counts.Added == 2 })

	for _, handle := range []*batches.Batch{batch, loaded} {
		_, err = handle.Add(context.Background(), e.queue.URL, jobsOf(1, nil)...)
		assert.ErrorIs(t, err, batches.ErrSealed)
	}
	// A batch of its own (a second Batches on the same table), sealed between Add's
	// read and its raise.
	sealing := &sealingAPI{API: e.api}
	b2, err := batches.New(sealing, e.producer, batches.Config{Table: e.table, Shards: 2})
	require.NoError(t, err)
	raced, err := b2.Open(context.Background(), batches.Callbacks{})
	require.NoError(t, err)
	_, err = raced.Add(context.Background(), e.queue.URL, producer.Job{Type: "work", Payload: work{N: 9, Block: true}})
	require.NoError(t, err)
	sealing.arm(raced)
	_, err = raced.Add(context.Background(), e.queue.URL, jobsOf(1, nil)...)
	assert.ErrorIs(t, err, batches.ErrSealed)
	require.True(t, sealing.sealed.Load(), "sealed between the read and the raise")
	racedStatus, err := b2.Get(context.Background(), raced.ID())
	require.NoError(t, err)
	assert.Equal(t, int64(1), racedStatus.Counts.Added, "the raced Add counted nothing")
	status, err := e.b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, int64(2), status.Counts.Added, "the parent and its child only")
	assert.Equal(t, 1, w.calls(ids[0]))

	close(w.release)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
}

// sealingAPI seals its armed batch right after the next GetItem (Add's read of the
// batch item), before the read's answer is returned.
type sealingAPI struct {
	batches.API
	mu     sync.Mutex
	batch  *batches.Batch
	sealed atomic.Bool
}

func (s *sealingAPI) arm(b *batches.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = b
}

func (s *sealingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := s.API.GetItem(ctx, in, opts...)
	s.mu.Lock()
	b := s.batch
	s.batch = nil
	s.mu.Unlock()
	if b != nil && err == nil {
		if sealErr := b.Seal(ctx); sealErr == nil {
			s.sealed.Store(true)
		}
	}
	return out, err
}
