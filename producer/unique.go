package producer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// UniqueStore keeps the keys of unique jobs for standard queues. Implementations must
// make Reserve atomic: of several concurrent Reserves of one key, at most one succeeds
// while an unexpired record exists. Expiry is judged by the times given, never by a
// store's own deletion of expired records. [DynamoDBUniqueStore] is the implementation.
type UniqueStore interface {
	// Reserve records key as held by owner until expires, unless a record of key exists
	// whose expiry is after now; then it returns that record and false.
	Reserve(ctx context.Context, key, owner string, now, expires time.Time) (held UniqueRecord, reserved bool, err error)
	// Confirm stores the message id of owner's send and keeps the key until expires. It
	// fails when owner no longer holds the key.
	Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error
	// Release removes owner's reservation after a failed send. Releasing a key owner
	// does not hold is not an error.
	Release(ctx context.Context, key, owner string) error
}

// UniqueRecord is the holder of a unique key.
type UniqueRecord struct {
	// Owner is the random token of the producer call that reserved the key.
	Owner string
	// MessageID is the id of the message sent for the key; empty while the send is
	// not confirmed.
	MessageID string
	// ExpiresAt is when the key is free again.
	ExpiresAt time.Time
}

// ErrNoUniqueStore is returned for a job with a UniqueKey on a standard queue when
// Config.Unique is nil.
var ErrNoUniqueStore = errors.New("producer: the job has a UniqueKey, the queue is a standard queue and Config.Unique is nil (FIFO queues use the deduplication id instead)")

// reservation is a unique key held by one Send.
type reservation struct {
	key       string
	owner     string
	uniqueFor time.Duration
}

// pollIntervals bound how often a duplicate asks whether the first send was confirmed.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = 500 * time.Millisecond
)

// reserve takes key for this call, or returns a [*DuplicateJobError] naming the holder's
// message id. While the holder has not confirmed its send, it waits for that up to
// Config.UniqueWait.
func (p *Producer) reserve(ctx context.Context, key string, uniqueFor time.Duration) (*reservation, error) {
	if p.config.Unique == nil {
		return nil, ErrNoUniqueStore
	}
	if uniqueFor <= 0 {
		uniqueFor = DefaultUniqueFor
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	r := &reservation{key: key, owner: hex.EncodeToString(token), uniqueFor: uniqueFor}
	deadline := p.config.Now().Add(p.config.UniqueWait)
	wait := firstPoll
	for {
		now := p.config.Now()
		held, reserved, err := p.config.Unique.Reserve(ctx, key, r.owner, now, now.Add(p.config.UniquePending))
		if err != nil {
			return nil, fmt.Errorf("producer: reserving unique key %q: %w", key, err)
		}
		switch {
		case reserved:
			return r, nil
		case held.MessageID != "":
			return nil, &DuplicateJobError{Key: key, MessageID: held.MessageID}
		case !now.Before(deadline):
			return nil, &DuplicateJobError{Key: key, Pending: true}
		}
		timer := time.NewTimer(min(wait, max(deadline.Sub(now), time.Millisecond)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("producer: waiting for the holder of unique key %q: %w", key, ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, maxPoll)
	}
}

// storeTimeout bounds confirming or releasing a reservation once the send is over;
// those calls run even when the caller's context has ended.
const storeTimeout = 5 * time.Second

func (p *Producer) confirm(ctx context.Context, r *reservation, messageID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := p.config.Unique.Confirm(ctx, r.key, r.owner, messageID, p.config.Now().Add(r.uniqueFor)); err != nil {
		return fmt.Errorf("%w (key %q, message %s): %w", ErrUniqueNotConfirmed, r.key, messageID, err)
	}
	return nil
}

// release frees the key after a failed send. A failure here only delays the key's
// reuse until the reservation expires, so it is not reported over the send's error.
func (p *Producer) release(ctx context.Context, r *reservation) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	_ = p.config.Unique.Release(ctx, r.key, r.owner)
}
