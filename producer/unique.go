package producer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// UniqueStore keeps the keys of unique jobs for standard queues. Implementations must
// make Reserve atomic: of several concurrent Reserves of one key, at most one succeeds
// while an unexpired record exists. Expiry is judged by the times given, never by a
// store's own deletion of expired records: an expired record counts as absent.
// [DynamoDBUniqueStore] is the implementation.
type UniqueStore interface {
	// Reserve records key as held by owner until expires, unless a record of key exists
	// whose expiry is after now; then it returns that record and false.
	Reserve(ctx context.Context, key, owner string, now, expires time.Time) (held UniqueRecord, reserved bool, err error)
	// Confirm stores the message id of owner's send and keeps the key until expires. It
	// fails with an error matching [ErrUniqueKeyNotHeld] when owner no longer holds the
	// key (its reservation expired, or Free removed it already).
	Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error
	// Release removes owner's reservation after a failed send (a key whose send was
	// confirmed stays). Releasing a key owner does not hold is not an error.
	Release(ctx context.Context, key, owner string) error
	// Free removes owner's key, confirmed or not: the job it guards is done
	// ([UniqueUntilDone]) or has started ([UniqueUntilStarted]). Freeing a key owner no
	// longer holds (expired and taken again, or freed already) is not an error and
	// changes nothing.
	Free(ctx context.Context, key, owner string) error
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

// UniqueMode says when a unique job's key is free again (Job.UniqueMode). Whatever the
// mode, the key is free once its window (Job.UniqueFor) ends.
type UniqueMode int

const (
	// UniqueUntilWindowEnds (the default): the key stays taken for the whole window from
	// the send; the job's completion, failure or dead-lettering does not free it. The
	// consumer side does nothing (no attribute is sent).
	UniqueUntilWindowEnds UniqueMode = iota
	// UniqueUntilDone: the key is freed when the job succeeds or the runtime
	// dead-letters it (a [sqsworker.Permanent] failure), by [UniqueMiddleware] on the
	// consumer side. A message that SQS's redrive policy moves to the dead-letter queue
	// keeps its key until the window ends: the worker never sees that move.
	UniqueUntilDone
	// UniqueUntilStarted: the key is freed when a handler starts the job (its first
	// delivery that is due), by [UniqueMiddleware]; a new job with the key may then be
	// sent while this one runs.
	UniqueUntilStarted
)

// String returns "until-window-ends", "until-done" or "until-started".
func (m UniqueMode) String() string {
	switch m {
	case UniqueUntilWindowEnds:
		return "until-window-ends"
	case UniqueUntilDone:
		return "until-done"
	case UniqueUntilStarted:
		return "until-started"
	}
	return fmt.Sprintf("UniqueMode(%d)", int(m))
}

// MinUniqueFor is the shortest unique window (Job.UniqueFor): the key's expiry is
// stored in epoch seconds for DynamoDB's TTL.
const MinUniqueFor = time.Second

// ErrUniqueKeyNotHeld matches the error [UniqueStore.Confirm] returns when the owner no
// longer holds the key.
var ErrUniqueKeyNotHeld = errors.New("producer: the unique key is no longer held by this send")

// ErrNoUniqueStore is returned for a job with a UniqueKey on a standard queue when
// Config.Unique is nil.
var ErrNoUniqueStore = errors.New("producer: the job has a UniqueKey, the queue is a standard queue and Config.Unique is nil (FIFO queues use the deduplication id instead)")

// reservation is a unique key held by one Send.
type reservation struct {
	key       string
	owner     string
	uniqueFor time.Duration
	mode      UniqueMode
}

// pollIntervals bound how often a duplicate asks whether the first send was confirmed.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = 500 * time.Millisecond
)

// uniqueReservation returns m's reservation-to-be: nil for a message that is not
// unique on a standard queue. It calls no store.
func (p *Producer) uniqueReservation(m Prepared) (*reservation, error) {
	if !m.reserves() {
		return nil, nil
	}
	if p.config.Unique == nil {
		return nil, ErrNoUniqueStore
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	return &reservation{key: m.UniqueKey, owner: hex.EncodeToString(token), uniqueFor: m.uniqueFor(), mode: m.UniqueMode}, nil
}

// releaseAttribute returns the [AttributeUniqueRelease] value of r, for the modes that
// free the key on the consumer side.
func (r *reservation) releaseAttribute() (types.MessageAttributeValue, bool) {
	if r == nil || r.mode == UniqueUntilWindowEnds {
		return types.MessageAttributeValue{}, false
	}
	return stringValue(releaseValue(r.mode, r.owner, r.key)), true
}

// reserve takes r's key for this call, or returns a [*DuplicateJobError] naming the
// holder's message id. While the holder has not confirmed its send, it waits for that up
// to Config.UniqueWait.
func (p *Producer) reserve(ctx context.Context, r *reservation) error {
	deadline := p.config.Now().Add(p.config.UniqueWait)
	wait := firstPoll
	for {
		now := p.config.Now()
		held, reserved, err := p.config.Unique.Reserve(ctx, r.key, r.owner, now, now.Add(p.config.UniquePending))
		if err != nil {
			return fmt.Errorf("producer: reserving unique key %q: %w", r.key, err)
		}
		switch {
		case reserved:
			return nil
		case held.MessageID != "":
			return &DuplicateJobError{Key: r.key, MessageID: held.MessageID}
		case !now.Before(deadline):
			return &DuplicateJobError{Key: r.key, Pending: true}
		}
		timer := time.NewTimer(min(wait, max(deadline.Sub(now), time.Millisecond)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("producer: waiting for the holder of unique key %q: %w", r.key, ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, maxPoll)
	}
}

// storeTimeout bounds confirming, releasing or freeing a key once the send (or the job)
// is over; those calls run even when the caller's context has ended.
const storeTimeout = 5 * time.Second

func (p *Producer) confirm(ctx context.Context, r *reservation, messageID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := p.config.Unique.Confirm(ctx, r.key, r.owner, messageID, p.config.Now().Add(r.uniqueFor))
	if errors.Is(err, ErrUniqueKeyNotHeld) && r.mode != UniqueUntilWindowEnds {
		// The job was quick: its consumer freed the key (done or started) before this
		// confirmation, and a new job may hold it already. Nothing is left to confirm.
		return nil
	}
	if err != nil {
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

// EnforcesUniqueKeys reports whether the producer enforces Job.UniqueKey on standard
// queues: true when Config.Unique is set. Without it, a job with a UniqueKey sent to a
// standard queue fails with [ErrNoUniqueStore] (FIFO queues use the deduplication id
// instead). Package batches checks it when a batch opens, not at its last job's end.
func (p *Producer) EnforcesUniqueKeys() bool { return p.config.Unique != nil }
