package claimcheck

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

func deletedEvent(host string, message *sqsworker.Message, outcome sqsworker.OutcomeKind) sqsworker.Event {
	return sqsworker.Event{Kind: sqsworker.EventDeleted, Host: host, Message: message, Outcome: sqsworker.Outcome{Kind: outcome}}
}

func TestCleanerDeletesThePayloadOfAMessageDeletedAfterSuccessOnly(t *testing.T) {
	client := newFakeS3()
	cleaner := NewCleaner(client, CleanerConfig{})
	handled := pointerMessage(client, "handled", "payload")
	deadLettered := pointerMessage(client, "dead", "payload")
	failedDelete := pointerMessage(client, "failed-delete", "payload")
	onLambda := pointerMessage(client, "lambda", "payload")
	ctx := context.Background()

	cleaner.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Host: "poller", Message: handled})
	cleaner.Observe(ctx, deletedEvent("poller", handled, sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeadLettered, Host: "poller", Message: deadLettered, Outcome: sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter}})
	cleaner.Observe(ctx, deletedEvent("poller", deadLettered, sqsworker.OutcomeDeadLetter))
	cleaner.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleteFailed, Host: "poller", Message: failedDelete, Outcome: sqsworker.Outcome{Kind: sqsworker.OutcomeDelete}})
	cleaner.Observe(ctx, deletedEvent("lambda", onLambda, sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, deletedEvent("poller", &sqsworker.Message{Body: "not a pointer"}, sqsworker.OutcomeDelete))
	require.NoError(t, cleaner.Shutdown(ctx))

	assert.Equal(t, []string{"b/handled"}, client.deletes)
	assert.Equal(t, CleanerStats{Deleted: 1}, cleaner.Stats())
	for _, key := range []string{"dead", "failed-delete", "lambda"} {
		_, ok := client.object("b", key)
		assert.True(t, ok, key)
	}
}

func TestCleanerCountsFailedAndDroppedDeletes(t *testing.T) {
	client := newFakeS3()
	client.deleteErr = errors.New("InternalError")
	cleaner := NewCleaner(client, CleanerConfig{})
	ctx := context.Background()
	cleaner.Observe(ctx, deletedEvent("poller", pointerMessage(client, "k1", "p"), sqsworker.OutcomeDelete))
	require.NoError(t, cleaner.Shutdown(ctx))
	cleaner.Observe(ctx, deletedEvent("poller", pointerMessage(client, "k2", "p"), sqsworker.OutcomeDelete))
	assert.Equal(t, CleanerStats{Failed: 1, Dropped: 1}, cleaner.Stats())
	assert.NoError(t, cleaner.Shutdown(ctx), "a second Shutdown")
}

// blockingS3 holds every DeleteObject until its context ends.
type blockingS3 struct {
	*fakeS3
	started chan struct{}
	once    sync.Once
}

func (b *blockingS3) DeleteObject(ctx context.Context, _ *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestCleanerNeverBlocksTheHostAndShutdownEndsAtItsDeadline(t *testing.T) {
	client := &blockingS3{fakeS3: newFakeS3(), started: make(chan struct{})}
	cleaner := NewCleaner(client, CleanerConfig{Workers: 1, QueueSize: 2, DeleteTimeout: time.Hour})
	ctx := context.Background()
	cleaner.Observe(ctx, deletedEvent("poller", pointerMessage(client.fakeS3, "k0", "p"), sqsworker.OutcomeDelete))
	<-client.started // the one worker is busy
	for _, key := range []string{"k1", "k2", "k3"} {
		cleaner.Observe(ctx, deletedEvent("poller", pointerMessage(client.fakeS3, key, "p"), sqsworker.OutcomeDelete))
	}
	assert.Equal(t, int64(1), cleaner.Stats().Dropped, "the third queued delete finds the queue full and is dropped at once")

	shutdownCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := cleaner.Shutdown(shutdownCtx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	stats := cleaner.Stats()
	assert.Zero(t, stats.Deleted)
	assert.Equal(t, int64(4), stats.Failed+stats.Dropped, "every delete is accounted for")
}
