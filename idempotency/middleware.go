package idempotency

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/txjoin"
)

// Failure reasons of the errors the middleware returns (see [sqsworker.Outcome].Reason).
const (
	// ReasonInProgress is the [sqsworker.DeferError] reason for a duplicate whose
	// original still holds its lease.
	ReasonInProgress = "IdempotencyInProgress"
	// ReasonPayloadMismatch is the [sqsworker.PermanentError] reason for a duplicate
	// whose payload hash differs from the record's.
	ReasonPayloadMismatch = "IdempotencyPayloadMismatch"
	// ReasonKeyMissing is the [sqsworker.PermanentError] reason for a message without a
	// key (unless Config.KeyOptional).
	ReasonKeyMissing = "IdempotencyKeyMissing"
	// ReasonPayloadInvalid is the [sqsworker.PermanentError] reason for a message whose
	// payload hash could not be computed (for example a non-JSON body with
	// HashJSONFields).
	ReasonPayloadInvalid = "IdempotencyPayloadInvalid"
)

// LogCompletedDuplicate is the message of the one info line a suppressed duplicate (its
// key's record is completed) leaves, with the attributes message_id, queue,
// receive_count, idempotency_key and record_status; the hosts log nothing more at info
// for it. Count duplicates by it (or by EventCompletedDuplicate).
const LogCompletedDuplicate = "idempotency: already completed; skipping the handler"

// maxClaimAttempts bounds the claims of one message when the conflicting record keeps
// changing between the conditional write and the read (ErrInconsistentState).
const maxClaimAttempts = 3

// Middleware returns a [sqsworker.Middleware] that runs the handler at most once per key
// at a time, and not again once it has succeeded, until the record's TTL.
//
// For each message it computes the key and the payload hash, then claims the key with
// [Store.PutInProgress] under a fresh random lease of Config.InProgressTTL (never past
// the context's deadline), recording the deadline. A lease ended less than
// Config.ClockSkewAllowance ago still counts as held. Then:
//
//   - claim written: the handler runs, and a heartbeat renews the lease every
//     InProgressTTL/3 until it returns or the lease can no longer be renewed (see
//     Config.InProgressTTL; [Store.Renew], conditioned on the lease). On success the
//     record becomes COMPLETED, with the result set by [SetResult] (left out, with a
//     warning, when the store cannot keep it: [ErrResultTooLarge]) and expiration now +
//     Config.TTL, and the middleware returns nil (if completing fails, the failure is
//     logged and nil is still returned: the work is done, and an error would only have
//     the message run again). Under the batches middleware (package batches), with
//     [DynamoDBStore], the completion is one TransactWriteItems that also counts the
//     job's success in its batch, conditioned on the lease and on the record being in
//     progress.
//     On error or panic the record is deleted and the HANDLER's error (or panic) is
//     passed on; a failed delete is only logged. Both writes are conditioned on the
//     lease. With an [InterruptionStore], an error after the host interrupted the
//     handler (its context's cause matches [sqsworker.ErrInterrupted]), or any error
//     once earlier receives were interrupted, keeps the record instead, its lease ended,
//     with the count of interrupted receives ([InterruptionStore.Interrupt], one write
//     in place of the delete). Such a record is not claimable: the next claim conflicts,
//     takes it over ([InterruptionStore.TakeOver], one more write) carrying the count
//     when it is for the same message, and sets [sqsworker.Message].Interrupted before
//     the handler runs, so those receives are no attempts ([sqsworker.Message.Attempt]).
//   - payload hash differs from the record's (completed or in progress): an error that
//     is a [sqsworker.PermanentError] with reason "IdempotencyPayloadMismatch" and
//     matches [ErrPayloadMismatch]. The handler does not run.
//   - record COMPLETED: the handler does not run; one info line
//     ([LogCompletedDuplicate]); Config.OnCompletedDuplicate is called if set, else nil
//     is returned.
//   - record IN_PROGRESS under another live lease: the duplicate first waits in process
//     for up to Config.DuplicateWait, reading the record: if the original completes, it
//     is a completed duplicate (above); if it fails or its lease ends, the duplicate
//     claims the key. Still running after the wait: a [sqsworker.DeferError] (reason
//     "IdempotencyInProgress", matching [ErrAlreadyInProgress]) until the original's
//     deadline (it was seen renewing its lease) or until its lease can be taken over
//     (no renewal seen: crashed), plus up to Config.MaxDeferJitter; the host counts it
//     as deferred, not failed, and does not delete the message. A record without
//     in_progress_expiry (an older or foreign writer) is deferred until its expiration.
//   - less than Config.MinRemaining before the context's deadline: nothing is written
//     and the handler does not run; the error matches [ErrInsufficientTime] (an
//     ordinary, retryable failure).
//
// A rejected duplicate never changes or deletes the record. Store failures are returned
// as [*StoreError] (retryable), an item under the key that is not an idempotency record
// among them ([ErrMalformedRecord]: logged as an error, never taken for a claim). Middleware panics if store is nil or config is invalid
// (see [Config.Validate]).
func Middleware(store Store, config Config) sqsworker.Middleware {
	if store == nil {
		panic("idempotency: Middleware with a nil store")
	}
	if err := config.Validate(); err != nil {
		panic(err.Error())
	}
	config = config.withDefaults()
	return func(next sqsworker.Handler) sqsworker.Handler {
		if next == nil {
			panic("idempotency: Middleware applied to a nil handler")
		}
		return &middleware{store: store, config: config, next: next}
	}
}

// SetResult stores result as the handler's result: when the handler then succeeds, the
// completed record keeps it (attribute "data") and duplicates receive it in
// Config.OnCompletedDuplicate. The last call wins; an empty result stores none. It
// reports false, storing nothing, when ctx does not come from the middleware.
// With DynamoDBStore the result counts against DynamoDB's 400 KB item limit (with the
// record's other attributes): a result that does not fit is left out, the record completing
// without it, and the middleware logs one warning saying so.
func SetResult(ctx context.Context, result []byte) bool {
	slot, ok := ctx.Value(resultKey{}).(*resultSlot)
	if !ok {
		return false
	}
	slot.set(result)
	return true
}

type resultKey struct{}

type resultSlot struct {
	mu     sync.Mutex
	result []byte
}

func (s *resultSlot) set(result []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.result = append([]byte(nil), result...)
}

func (s *resultSlot) get() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result
}

type middleware struct {
	store  Store
	config Config
	next   sqsworker.Handler
}

// Handle implements [sqsworker.Handler].
func (m *middleware) Handle(ctx context.Context, message *sqsworker.Message) error {
	logger, attributes := messageLogger(m.config.Logger, message)
	key, err := m.config.KeyFunc(message)
	if err == nil && key == "" {
		err = fmt.Errorf("%w: key function returned an empty key", ErrKeyMissing)
	}
	if err != nil {
		if !errors.Is(err, ErrKeyMissing) {
			return err
		}
		if m.config.KeyOptional {
			// Nothing is read, written or deleted: a keyless message never shares a record.
			logger.WarnContext(ctx, "idempotency bypassed: missing key", slog.Any("error", err))
			m.observe(ctx, message, Event{Kind: EventBypassed, Err: err})
			return m.next.Handle(ctx, message)
		}
		logger.WarnContext(ctx, "idempotency: no key", slog.Any("error", err))
		m.observe(ctx, message, Event{Kind: EventKeyMissing, Err: err})
		return sqsworker.Permanent(ReasonKeyMissing, err)
	}
	key, err = StoredKey(m.config.KeyPrefix, key)
	if err != nil { // the prefix was validated by Middleware and the key is not empty
		return err
	}
	attributes.key = key // before any goroutine logs: the heartbeat starts after the claim

	hash, err := m.config.PayloadHash(message)
	if err != nil {
		logger.WarnContext(ctx, "idempotency: cannot hash the payload", slog.Any("error", err))
		m.observe(ctx, message, Event{Kind: EventPayloadInvalid, Key: key, Err: err})
		return sqsworker.Permanent(ReasonPayloadInvalid, fmt.Errorf("idempotency: hashing the payload for key %q: %w", key, err))
	}

	now := m.config.Clock.Now()
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		if remaining := deadline.Sub(now); remaining < m.config.MinRemaining {
			err := fmt.Errorf("%w: key %q: %s left before the deadline, need %s",
				ErrInsufficientTime, key, remaining, m.config.MinRemaining)
			logger.WarnContext(ctx, "idempotency: not claiming", slog.Any("error", err))
			m.observe(ctx, message, Event{Kind: EventInsufficientTime, Key: key, Err: err})
			return err
		}
	} else {
		deadline = time.Time{}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("idempotency: not claiming key %q: %w", key, err)
	}
	claim := Record{
		Key:         key,
		Status:      StatusInProgress,
		Deadline:    deadline,
		Lease:       rand.Text(),
		PayloadHash: hash,
	}
	join := m.bindJoin(ctx, key)
	claimed, err := m.claim(ctx, message, &claim, logger)
	if !claimed {
		return err
	}
	return m.run(ctx, message, claim, join, logger)
}

// bindJoin binds the outer middleware's join in ctx (package txjoin) when the store can
// complete records with its writes, and returns it; nil when there is none or it does
// not apply.
func (m *middleware) bindJoin(ctx context.Context, key string) *txjoin.Join {
	join := txjoin.From(ctx)
	store, ok := joinable(m.store)
	if join == nil || !ok || !join.Bind(store.notCompletedCheck(key), m.config.TTL) {
		return nil
	}
	return join
}

// observe fills ev's time and message fields and tells the observer.
func (m *middleware) observe(ctx context.Context, message *sqsworker.Message, ev Event) {
	ev.Time = m.config.Clock.Now()
	ev.MessageID, ev.Queue = message.ID, message.QueueURL
	m.config.Observer.ObserveIdempotency(ctx, ev)
}
