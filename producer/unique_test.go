package producer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingUnique counts the store calls of a memoryUnique.
type countingUnique struct {
	*memoryUnique
	calls int
}

func (c *countingUnique) Reserve(ctx context.Context, key, owner string, now, expires time.Time) (UniqueRecord, bool, error) {
	c.calls++
	return c.memoryUnique.Reserve(ctx, key, owner, now, expires)
}

// TestUniqueWindowRules (CASES.md N20 (d) and (g)): a window the key would not outlive
// the job's delay with, or under a second, is refused at send, before any store call
// or send: a 5-minute key on a job delayed 40 minutes would be free again before the
// job runs.
func TestUniqueWindowRules(t *testing.T) {
	fake, store := newFake(), &countingUnique{memoryUnique: newMemoryUnique()}
	p := newProducer(t, fake, Config{Unique: store})
	for _, c := range []struct {
		job  Job
		want string
	}{
		{Job{Body: "x", UniqueKey: "K", UniqueFor: 5 * time.Minute, Delay: 40 * time.Minute}, "unique window 5m0s is shorter than the delay 40m0s"},
		{Job{Body: "x", UniqueKey: "K", UniqueFor: 10 * time.Minute, Delay: 10 * time.Minute}, "unique window 10m0s equals the delay 10m0s"},
		{Job{Body: "x", UniqueKey: "K", UniqueFor: 500 * time.Millisecond}, "unique window must be at least 1s"},
		{Job{Body: "x", UniqueKey: "K", Delay: 2 * time.Hour}, "unique window 1h0m0s is shorter than the delay 2h0m0s"}, // the default window
		{Job{Body: "x", UniqueMode: UniqueUntilDone}, "need a Job.UniqueKey"},
		{Job{Body: "x", UniqueFor: time.Minute}, "need a Job.UniqueKey"},
		{Job{Body: "x", UniqueKey: "K", UniqueMode: UniqueMode(7)}, "unknown Job.UniqueMode 7"},
	} {
		_, err := p.Send(context.Background(), standardURL, c.job)
		assert.ErrorContains(t, err, c.want)
	}
	_, err := p.Send(context.Background(), fifoURL, Job{Body: "x", GroupID: "g", UniqueKey: "K", UniqueMode: UniqueUntilStarted})
	assert.ErrorContains(t, err, "needs a standard queue")
	assert.Zero(t, store.calls, "no store call")
	assert.Empty(t, fake.sent(), "nothing sent")

	// A window of exactly 1 s, and one longer than the delay, are accepted.
	_, err = p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "one-second", UniqueFor: time.Second})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "outlives", UniqueFor: 41 * time.Minute, Delay: 40 * time.Minute})
	require.NoError(t, err)
}

// TestUniqueModeTravelsWithTheJob: UntilDone and UntilStarted jobs carry the release
// attribute (mode, owner token, key); UntilWindowEnds jobs carry none.
func TestUniqueModeTravelsWithTheJob(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{Unique: newMemoryUnique()})
	for _, mode := range []UniqueMode{UniqueUntilWindowEnds, UniqueUntilDone, UniqueUntilStarted} {
		_, err := p.Send(context.Background(), standardURL, Job{Body: mode.String(), UniqueKey: "key:" + mode.String(), UniqueMode: mode})
		require.NoError(t, err)
	}
	sent := fake.sent()
	require.Len(t, sent, 3)
	assert.Empty(t, sent[0].attribute(AttributeUniqueRelease))
	assert.Regexp(t, `^until-done:[0-9a-f]{32}:key:until-done$`, sent[1].attribute(AttributeUniqueRelease))
	assert.Regexp(t, `^until-started:[0-9a-f]{32}:key:until-started$`, sent[2].attribute(AttributeUniqueRelease))
}

// quickConsumer frees every key just before its confirmation arrives: the job's
// consumer was faster than the producer's Confirm.
type quickConsumer struct{ *memoryUnique }

func (q quickConsumer) Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error {
	_ = q.Free(ctx, key, owner)
	return q.memoryUnique.Confirm(ctx, key, owner, messageID, expires)
}

// TestUniqueKeyFreedBeforeItsConfirmation: an UntilDone or UntilStarted job can be
// handled (and its key freed) before Send confirms the key. That Send succeeded but
// returned ErrUniqueNotConfirmed; now it returns the message id. An UntilWindowEnds
// job's key is never freed that way, so a lost key there is still reported.
func TestUniqueKeyFreedBeforeItsConfirmation(t *testing.T) {
	p := newProducer(t, newFake(), Config{Unique: quickConsumer{newMemoryUnique()}})
	for _, mode := range []UniqueMode{UniqueUntilDone, UniqueUntilStarted} {
		id, err := p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "K", UniqueMode: mode})
		require.NoError(t, err, mode)
		assert.NotEmpty(t, id)
	}
	id, err := p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "K"})
	assert.ErrorIs(t, err, ErrUniqueNotConfirmed)
	assert.NotEmpty(t, id, "sent all the same")
}
