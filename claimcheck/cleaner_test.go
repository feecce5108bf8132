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

func event(kind sqsworker.EventKind, host string, message *sqsworker.Message, outcome sqsworker.OutcomeKind) sqsworker.Event {
	return sqsworker.Event{Kind: kind, Host: host, Message: message, Outcome: sqsworker.Outcome{Kind: outcome}}
}

// resolved runs message through the middleware with cleaner, as a host would, and
// returns the handler's error.
func resolved(t *testing.T, client *fakeS3, cleaner *Cleaner, message *sqsworker.Message, handlerErr error) error {
	t.Helper()
	handler := middleware(t, client, ResolverConfig{Cleaner: cleaner})(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return handlerErr
	}))
	return handler.Handle(context.Background(), message)
}

func withReceipt(message *sqsworker.Message) *sqsworker.Message {
	message.QueueURL, message.ReceiptHandle = "https://sqs.example/q", "rh-"+message.ID
	return message
}

func TestCleanerDeletesThePayloadOfAMessageDeletedAfterSuccessOnly(t *testing.T) {
	client := newFakeS3()
	cleaner := NewCleaner(client, CleanerConfig{})
	ctx := context.Background()
	messages := map[string]*sqsworker.Message{}
	for _, key := range []string{"handled", "dead", "delete-failed", "rescheduled", "released", "lambda", "hopped"} {
		messages[key] = withReceipt(pointerMessage(client, key, "payload"))
		if key != "hopped" { // a hop re-sends the pointer without calling the middleware
			_ = resolved(t, client, cleaner, messages[key], nil)
		}
	}
	cleaner.Observe(ctx, event(sqsworker.EventFinished, "poller", messages["handled"], sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", messages["handled"], sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, event(sqsworker.EventDeadLettered, "poller", messages["dead"], sqsworker.OutcomeDeadLetter))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", messages["dead"], sqsworker.OutcomeKind(0))) // as the hosts report it: without the outcome
	cleaner.Observe(ctx, event(sqsworker.EventDeleteFailed, "poller", messages["delete-failed"], sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, event(sqsworker.EventRescheduled, "poller", messages["rescheduled"], sqsworker.OutcomeRetry))
	cleaner.Observe(ctx, event(sqsworker.EventReleased, "poller", messages["released"], sqsworker.OutcomeKind(0)))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "lambda", messages["lambda"], sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", messages["hopped"], sqsworker.OutcomeDelete))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", withReceipt(&sqsworker.Message{ID: "plain", Body: "not a pointer"}), sqsworker.OutcomeDelete))
	require.NoError(t, cleaner.Shutdown(ctx))

	assert.Equal(t, []string{"b/handled"}, client.deletes)
	assert.Equal(t, CleanerStats{Deleted: 1}, cleaner.Stats())
	assert.Zero(t, cleaner.Stats().Tracked, "every settled delivery is forgotten")
	for _, key := range []string{"dead", "delete-failed", "rescheduled", "released", "lambda", "hopped"} {
		_, ok := client.object("b", key)
		assert.True(t, ok, key)
	}
}

func TestCleanerDeletesOnlyTheDeliveryThatWasHandled(t *testing.T) {
	client := newFakeS3()
	cleaner := NewCleaner(client, CleanerConfig{})
	ctx := context.Background()
	first := withReceipt(pointerMessage(client, "k", "payload"))
	require.EqualError(t, resolved(t, client, cleaner, first, errors.New("try again")), "try again")
	cleaner.Observe(ctx, event(sqsworker.EventRescheduled, "poller", first, sqsworker.OutcomeRetry))
	second := withReceipt(pointerMessage(client, "k", "payload"))
	second.ReceiptHandle = "rh-second-receive"
	require.NoError(t, resolved(t, client, cleaner, second, nil))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", first, sqsworker.OutcomeDelete)) // a stale event for the first receive
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", second, sqsworker.OutcomeDelete))
	require.NoError(t, cleaner.Shutdown(ctx))
	assert.Equal(t, []string{"b/k"}, client.deletes)
}

func TestCleanerCountsFailedAndDroppedDeletes(t *testing.T) {
	client := newFakeS3()
	client.deleteErr = errors.New("InternalError")
	cleaner := NewCleaner(client, CleanerConfig{MaxTracked: 2})
	ctx := context.Background()
	deleteAfterSuccess := func(key string) {
		message := withReceipt(pointerMessage(client, key, "p"))
		_ = resolved(t, client, cleaner, message, nil)
		cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", message, sqsworker.OutcomeDelete))
	}
	deleteAfterSuccess("k1")
	for _, key := range []string{"t1", "t2", "t3"} { // never settled: the third is not tracked
		_ = resolved(t, client, cleaner, withReceipt(pointerMessage(client, key, "p")), nil)
	}
	require.NoError(t, cleaner.Shutdown(ctx))
	deleteAfterSuccess("k2") // after Shutdown
	assert.Equal(t, CleanerStats{Failed: 1, Dropped: 2, Tracked: 2}, cleaner.Stats())
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
	deleteAfterSuccess := func(key string) {
		message := withReceipt(pointerMessage(client.fakeS3, key, "p"))
		_ = resolved(t, client.fakeS3, cleaner, message, nil)
		cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", message, sqsworker.OutcomeDelete))
	}
	deleteAfterSuccess("k0")
	<-client.started // the one worker is busy
	for _, key := range []string{"k1", "k2", "k3"} {
		deleteAfterSuccess(key)
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

func TestCleanerNeverDeletesASharedPayload(t *testing.T) {
	client := newFakeS3()
	cleaner := NewCleaner(client, CleanerConfig{})
	ctx := context.Background()
	message := withReceipt(pointerMessage(client, "shared", "payload"))
	message.MessageAttributes[AttributePayloadShared] = sqsworker.MessageAttribute{DataType: "String", StringValue: "1"}
	require.NoError(t, resolved(t, client, cleaner, message, nil))
	cleaner.Observe(ctx, event(sqsworker.EventDeleted, "poller", message, sqsworker.OutcomeDelete))
	require.NoError(t, cleaner.Shutdown(ctx))
	assert.Empty(t, client.deletes)
	assert.Equal(t, CleanerStats{Shared: 1}, cleaner.Stats())
}
