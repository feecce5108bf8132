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

// maxClaimAttempts bounds the claims of one message when the conflicting record keeps
// changing between the conditional write and the read (ErrInconsistentState).
const maxClaimAttempts = 3

// Middleware returns a [sqsworker.Middleware] that runs the handler at most once per key
// at a time, and not again once it has succeeded, until the record's TTL.
//
// For each message it computes the key and the payload hash, then claims the key with
// [Store.PutInProgress] under a fresh random lease that ends at the context's deadline
// (or after Config.InProgressTTL without one). Then:
//
//   - claim written: the handler runs. On success the record becomes COMPLETED, with the
//     result set by [SetResult] and expiration now + Config.TTL, and the middleware
//     returns nil (if completing fails, the failure is logged and nil is still
//     returned: the work is done, and an error would only have the message run again).
//     On error or panic the record is deleted and the HANDLER's error (or panic) is
//     passed on; a failed delete is only logged. Both writes are conditioned on the
//     lease.
//   - payload hash differs from the record's (completed or in progress): an error that
//     is a [sqsworker.PermanentError] with reason "IdempotencyPayloadMismatch" and
//     matches [ErrPayloadMismatch]. The handler does not run.
//   - record COMPLETED: the handler does not run; Config.OnCompletedDuplicate is called
//     if set, else nil is returned.
//   - record IN_PROGRESS under another lease: a [sqsworker.DeferError] (reason
//     "IdempotencyInProgress", matching [ErrAlreadyInProgress]) with the lease's
//     remaining time plus up to Config.MaxDeferJitter as its delay: the host counts it
//     as deferred, not failed, and does not delete the message.
//   - less than Config.MinRemaining before the context's deadline: nothing is written
//     and the handler does not run; the error matches [ErrInsufficientTime] (an
//     ordinary, retryable failure).
//
// A rejected duplicate never changes or deletes the record. Store failures are returned
// as [*StoreError] (retryable). Middleware panics if store is nil or config is invalid
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
// The result counts against DynamoDB's 400 KB item limit.
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
	logger := m.config.Logger.With(
		slog.String("message_id", message.ID),
		slog.String("queue", message.QueueURL),
		slog.Int("receive_count", message.ReceiveCount),
	)
	key, err := m.config.KeyFunc(message)
	if err == nil && key == "" {
		err = fmt.Errorf("%w: key function returned an empty key", ErrKeyMissing)
	}
	if err != nil {
		if !errors.Is(err, ErrKeyMissing) {
			return err
		}
		if m.config.KeyOptional {
			logger.DebugContext(ctx, "idempotency: no key; running the handler without idempotency", slog.Any("error", err))
			return m.next.Handle(ctx, message)
		}
		logger.WarnContext(ctx, "idempotency: no key", slog.Any("error", err))
		return sqsworker.Permanent(ReasonKeyMissing, err)
	}
	key, err = StoredKey(m.config.KeyPrefix, key)
	if err != nil { // the prefix was validated by Middleware and the key is not empty
		return err
	}
	logger = logger.With(slog.String("idempotency_key", key))

	hash, err := m.config.PayloadHash(message)
	if err != nil {
		logger.WarnContext(ctx, "idempotency: cannot hash the payload", slog.Any("error", err))
		return sqsworker.Permanent(ReasonPayloadInvalid, fmt.Errorf("idempotency: hashing the payload for key %q: %w", key, err))
	}

	now := m.config.Clock.Now()
	leaseEnd, err := m.leaseEnd(ctx, now, key)
	if err != nil {
		logger.WarnContext(ctx, "idempotency: not claiming", slog.Any("error", err))
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("idempotency: not claiming key %q: %w", key, err)
	}
	claim := Record{
		Key:    key,
		Status: StatusInProgress,
		// The record outlives its lease, so "expiration < :now" never frees a live lease.
		ExpiresAt:           ceilSecond(later(now.Add(m.config.TTL), leaseEnd)),
		InProgressExpiresAt: leaseEnd,
		Lease:               rand.Text(),
		PayloadHash:         hash,
	}
	claimed, err := m.claim(ctx, message, claim, now, logger)
	if !claimed {
		return err
	}
	return m.run(ctx, message, claim, logger)
}

// leaseEnd returns when the claim's lease ends: the context's deadline, or now +
// InProgressTTL without one. It refuses with ErrInsufficientTime when the deadline is
// less than MinRemaining away.
func (m *middleware) leaseEnd(ctx context.Context, now time.Time, key string) (time.Time, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return now.Add(m.config.InProgressTTL), nil
	}
	if remaining := deadline.Sub(now); remaining < m.config.MinRemaining {
		return time.Time{}, fmt.Errorf("%w: key %q: %s left before the deadline, need %s",
			ErrInsufficientTime, key, remaining, m.config.MinRemaining)
	}
	return deadline, nil
}

// claim writes the in-progress record. It reports true when the handler may run;
// otherwise err is the message's outcome (nil for a completed duplicate).
func (m *middleware) claim(ctx context.Context, message *sqsworker.Message, claim Record, now time.Time, logger *slog.Logger) (bool, error) {
	for range maxClaimAttempts {
		err := m.store.PutInProgress(ctx, claim, now)
		if err == nil {
			logger.DebugContext(ctx, "idempotency: claimed", slog.Time("lease_end", claim.InProgressExpiresAt))
			return true, nil
		}
		exists, ok := errors.AsType[*AlreadyExistsError](err)
		if !ok {
			logger.WarnContext(ctx, "idempotency: claim failed", slog.Any("error", err))
			return false, err
		}
		var existing Record
		if exists.Existing != nil {
			existing = *exists.Existing
		} else {
			existing, err = m.store.Get(ctx, claim.Key)
			if errors.Is(err, ErrNotFound) {
				continue // deleted since the conditional write: claim again
			}
			if err != nil {
				logger.WarnContext(ctx, "idempotency: reading the conflicting record failed", slog.Any("error", err))
				return false, err
			}
		}
		if existing.Status == StatusInProgress && existing.Lease == claim.Lease {
			// Our own write: the SDK retried a PutItem whose first attempt succeeded but
			// whose response was lost, and the retry failed its own condition.
			logger.DebugContext(ctx, "idempotency: claimed (the conflicting record is our own retried write)")
			return true, nil
		}
		if existing.Claimable(now) {
			continue // replaced or expired since the conditional write: claim again
		}
		return false, m.duplicate(ctx, message, claim, existing, now, logger)
	}
	err := fmt.Errorf("%w: key %q after %d claims", ErrInconsistentState, claim.Key, maxClaimAttempts)
	logger.WarnContext(ctx, "idempotency: claim failed", slog.Any("error", err))
	return false, err
}

// duplicate decides the outcome of a message whose key holds a live record. It never
// writes to the store.
func (m *middleware) duplicate(ctx context.Context, message *sqsworker.Message, claim, existing Record, now time.Time, logger *slog.Logger) error {
	logger = logger.With(slog.String("record_status", string(existing.Status)))
	if existing.PayloadHash != "" && claim.PayloadHash != "" && existing.PayloadHash != claim.PayloadHash {
		logger.WarnContext(ctx, "idempotency: payload differs from the stored record")
		return sqsworker.Permanent(ReasonPayloadMismatch, fmt.Errorf("%w: key %q", ErrPayloadMismatch, claim.Key))
	}
	switch existing.Status {
	case StatusCompleted:
		logger.InfoContext(ctx, "idempotency: already completed; skipping the handler")
		if m.config.OnCompletedDuplicate != nil {
			return m.config.OnCompletedDuplicate(ctx, message, existing)
		}
		return nil
	case StatusInProgress:
		delay := existing.LeaseRemaining(now) + time.Duration(m.config.Random()*float64(m.config.MaxDeferJitter))
		logger.InfoContext(ctx, "idempotency: in progress elsewhere; deferring", slog.Duration("delay", delay))
		return fmt.Errorf("%w: key %q: %w", ErrAlreadyInProgress, claim.Key, sqsworker.Defer(delay, ReasonInProgress))
	}
	return fmt.Errorf("%w: key %q has a record with unknown status %q", ErrInconsistentState, claim.Key, existing.Status)
}

// run calls the handler under a held claim and completes or releases the record.
func (m *middleware) run(ctx context.Context, message *sqsworker.Message, claim Record, logger *slog.Logger) (err error) {
	slot := &resultSlot{}
	returned := false
	defer func() {
		if !returned { // the handler panicked (or called runtime.Goexit): free the key, let the panic go on
			m.release(ctx, claim, logger)
		}
	}()
	err = m.next.Handle(context.WithValue(ctx, resultKey{}, slot), message)
	returned = true
	if err != nil {
		m.release(ctx, claim, logger)
		return err
	}
	completed := claim
	completed.Status = StatusCompleted
	completed.ExpiresAt = ceilSecond(m.config.Clock.Now().Add(m.config.TTL))
	completed.InProgressExpiresAt = time.Time{}
	completed.Result = slot.get()
	storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.config.StoreTimeout)
	defer cancel()
	if err := m.store.Complete(storeCtx, completed); err != nil {
		logger.ErrorContext(ctx, "idempotency: handler succeeded but completing the record failed; a later duplicate may run again once the lease ends", slog.Any("error", err))
		return nil
	}
	logger.DebugContext(ctx, "idempotency: completed")
	return nil
}

// release deletes the claim's record, conditioned on its lease, so a retry can run at
// once instead of waiting for the lease to end. Failures are logged only.
func (m *middleware) release(ctx context.Context, claim Record, logger *slog.Logger) {
	storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.config.StoreTimeout)
	defer cancel()
	if err := m.store.Delete(storeCtx, claim.Key, claim.Lease); err != nil {
		logger.WarnContext(ctx, "idempotency: releasing the record after a handler failure failed; duplicates wait for the lease to end", slog.Any("error", err))
		return
	}
	logger.DebugContext(ctx, "idempotency: released after a handler failure")
}

// ceilSecond rounds t up to a whole second (expiration is stored in epoch seconds).
func ceilSecond(t time.Time) time.Time {
	rounded := time.Unix(t.Unix(), 0)
	if rounded.Before(t) {
		rounded = rounded.Add(time.Second)
	}
	return rounded
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
