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
// [Store.PutInProgress] under a fresh random lease of Config.InProgressTTL (never past
// the context's deadline), recording the deadline. A lease ended less than
// Config.ClockSkewAllowance ago still counts as held. Then:
//
//   - claim written: the handler runs, and a heartbeat renews the lease every
//     InProgressTTL/3 until it returns ([Store.Renew], conditioned on the lease). On success the record becomes COMPLETED, with the
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
	logger = logger.With(slog.String("idempotency_key", key))

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
	claimed, err := m.claim(ctx, message, &claim, logger)
	if !claimed {
		return err
	}
	return m.run(ctx, message, claim, logger)
}

// leaseEnd returns where a lease taken or renewed at now ends: now + InProgressTTL, but
// never past the handler's deadline (zero: none).
func (m *middleware) leaseEnd(now, deadline time.Time) time.Time {
	end := now.Add(m.config.InProgressTTL)
	if !deadline.IsZero() && end.After(deadline) {
		return deadline
	}
	return end
}

// claimable reports whether a claim at now may replace r, with the clock skew
// allowance: r's lease must have ended ClockSkewAllowance before now.
func (m *middleware) claimable(r Record, now time.Time) bool {
	return r.Claimable(now.Add(-m.config.ClockSkewAllowance))
}

// claim writes the in-progress record (setting its times). It reports true when the
// handler may run; otherwise err is the message's outcome (nil for a completed
// duplicate). A live record is waited for once (Config.DuplicateWait).
func (m *middleware) claim(ctx context.Context, message *sqsworker.Message, claim *Record, logger *slog.Logger) (bool, error) {
	waited := false
	for attempt := 0; attempt < maxClaimAttempts; attempt++ {
		now := m.config.Clock.Now()
		claim.InProgressExpiresAt = m.leaseEnd(now, claim.Deadline)
		// The record outlives its lease, so "expiration < :now" never frees a live lease.
		claim.ExpiresAt = ceilSecond(later(now.Add(m.config.TTL), claim.InProgressExpiresAt))
		// The store compares lease ends with now - allowance: a takeover needs the lease
		// to have ended that long ago, in the store's condition as in claimable.
		err := m.store.PutInProgress(ctx, *claim, now.Add(-m.config.ClockSkewAllowance))
		if err == nil {
			logger.DebugContext(ctx, "idempotency: claimed", slog.Time("lease_end", claim.InProgressExpiresAt))
			m.observe(ctx, message, Event{Kind: EventClaimed, Key: claim.Key})
			return true, nil
		}
		exists, ok := errors.AsType[*AlreadyExistsError](err)
		if !ok {
			logger.WarnContext(ctx, "idempotency: claim failed", slog.Any("error", err))
			m.observe(ctx, message, Event{Kind: EventStoreError, Key: claim.Key, Err: err})
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
				m.observe(ctx, message, Event{Kind: EventStoreError, Key: claim.Key, Err: err})
				return false, err
			}
		}
		if existing.Status == StatusInProgress && existing.Lease == claim.Lease {
			// Our own write: the SDK retried a PutItem whose first attempt succeeded but
			// whose response was lost, and the retry failed its own condition.
			logger.DebugContext(ctx, "idempotency: claimed (the conflicting record is our own retried write)")
			m.observe(ctx, message, Event{Kind: EventClaimed, Key: claim.Key})
			return true, nil
		}
		if m.claimable(existing, now) {
			continue // replaced or expired since the conditional write: claim again
		}
		if m.mismatch(*claim, existing) || existing.Status != StatusInProgress || existing.InProgressExpiresAt.IsZero() || waited {
			return false, m.duplicate(ctx, message, *claim, existing, now, false, logger)
		}
		waited = true
		latest, found, silent, err := m.await(ctx, claim.Key, existing, logger)
		switch {
		case err != nil:
			return false, m.duplicate(ctx, message, *claim, existing, m.config.Clock.Now(), false, logger)
		case !found:
			attempt = -1 // released by a failed original: claim afresh
			continue
		case latest.Status != StatusInProgress || !m.claimable(latest, m.config.Clock.Now()):
			return false, m.duplicate(ctx, message, *claim, latest, m.config.Clock.Now(), silent, logger)
		}
		// the lease ended while we waited: claim again (the store re-checks it)
	}
	err := fmt.Errorf("%w: key %q after %d claims", ErrInconsistentState, claim.Key, maxClaimAttempts)
	logger.WarnContext(ctx, "idempotency: claim failed", slog.Any("error", err))
	m.observe(ctx, message, Event{Kind: EventStoreError, Key: claim.Key, Err: err})
	return false, err
}

// Poll intervals of [middleware.await].
const (
	firstPollInterval = 20 * time.Millisecond
	maxPollInterval   = 250 * time.Millisecond
)

// await polls the record of a running claim (consistent reads) until it is no longer in
// progress under seen's lease, its lease ends, or the wait (Config.DuplicateWait, and
// the context's deadline minus MinRemaining) is over. It returns the last record read
// and found=false when the record is gone; silent reports that the wait lasted
// InProgressTTL/2 or longer (one and a half renewal intervals) without the lease being
// renewed: its holder has probably crashed. A read failure ends the wait with the error.
func (m *middleware) await(ctx context.Context, key string, seen Record, logger *slog.Logger) (latest Record, found, silent bool, err error) {
	start := time.Now()
	first := seen.InProgressExpiresAt
	// A live holder renews every InProgressTTL/3; no renewal for InProgressTTL/2 (half
	// as long again, for slow round trips) means it has stopped.
	silence := func() bool {
		return seen.InProgressExpiresAt.Equal(first) && time.Since(start) >= m.config.InProgressTTL/2
	}
	end := start.Add(m.config.DuplicateWait)
	if deadline, ok := ctx.Deadline(); ok {
		end = earlier(end, deadline.Add(-m.config.MinRemaining))
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for interval := firstPollInterval; ; interval = min(2*interval, maxPollInterval) {
		wait := min(interval, time.Until(end))
		if wait <= 0 {
			logger.DebugContext(ctx, "idempotency: still in progress after waiting", slog.Duration("waited", time.Since(start)),
				slog.Bool("renewed", !silence()))
			return seen, true, silence(), nil
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return seen, true, silence(), nil
		case <-timer.C:
		}
		latest, err := m.store.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			logger.DebugContext(ctx, "idempotency: the original released the key while we waited", slog.Duration("waited", time.Since(start)))
			return Record{}, false, false, nil
		}
		if err != nil {
			logger.WarnContext(ctx, "idempotency: reading the record while waiting failed", slog.Any("error", err))
			return seen, true, false, err
		}
		if latest.Status != StatusInProgress || latest.Lease != seen.Lease || m.claimable(latest, m.config.Clock.Now()) {
			logger.DebugContext(ctx, "idempotency: the record changed while we waited",
				slog.String("record_status", string(latest.Status)), slog.Duration("waited", time.Since(start)))
			return latest, true, false, nil
		}
		seen = latest
	}
}

// mismatch reports whether the claim's payload hash differs from the record's.
func (m *middleware) mismatch(claim, existing Record) bool {
	return existing.PayloadHash != "" && claim.PayloadHash != "" && existing.PayloadHash != claim.PayloadHash
}

// duplicate decides the outcome of a message whose key holds a live record. It never
// writes to the store.
//
// silent says the duplicate waited InProgressTTL/2 without seeing the lease renewed, so
// its holder has probably crashed (see deferral).
func (m *middleware) duplicate(ctx context.Context, message *sqsworker.Message, claim, existing Record, now time.Time, silent bool, logger *slog.Logger) error {
	logger = logger.With(slog.String("record_status", string(existing.Status)))
	if m.mismatch(claim, existing) {
		logger.WarnContext(ctx, "idempotency: payload differs from the stored record")
		err := fmt.Errorf("%w: key %q", ErrPayloadMismatch, claim.Key)
		m.observe(ctx, message, Event{Kind: EventPayloadMismatch, Key: claim.Key, Err: err})
		return sqsworker.Permanent(ReasonPayloadMismatch, err)
	}
	switch existing.Status {
	case StatusCompleted:
		logger.InfoContext(ctx, "idempotency: already completed; skipping the handler")
		m.observe(ctx, message, Event{Kind: EventCompletedDuplicate, Key: claim.Key})
		if m.config.OnCompletedDuplicate != nil {
			return m.config.OnCompletedDuplicate(ctx, message, existing)
		}
		return nil
	case StatusInProgress:
		delay := m.deferral(ctx, existing, now, silent, logger) + time.Duration(m.config.Random()*float64(m.config.MaxDeferJitter))
		logger.InfoContext(ctx, "idempotency: in progress elsewhere; deferring", slog.Duration("delay", delay))
		m.observe(ctx, message, Event{Kind: EventDeferred, Key: claim.Key, Delay: delay})
		return fmt.Errorf("%w: key %q: %w", ErrAlreadyInProgress, claim.Key, sqsworker.Defer(delay, ReasonInProgress))
	}
	err := fmt.Errorf("%w: key %q has a record with unknown status %q", ErrInconsistentState, claim.Key, existing.Status)
	m.observe(ctx, message, Event{Kind: EventStoreError, Key: claim.Key, Err: err})
	return err
}

// deferral is how long a duplicate of a running claim stays away (before jitter). A
// live original (renewing its lease) runs until its deadline at most, so the duplicate
// stays away until then and spends one receive, not one per lease. A silent original
// (no renewal seen for InProgressTTL/2 while waiting: crashed) or one without a
// deadline can be taken over at lease end + ClockSkewAllowance, so the duplicate comes
// back then. A record without a lease expiry (written by an older or foreign writer)
// cannot be taken over before its expiration, so the duplicate stays away until then.
// Hosts cap the delay at SQS's 12-hour visibility limit.
func (m *middleware) deferral(ctx context.Context, existing Record, now time.Time, silent bool, logger *slog.Logger) time.Duration {
	switch {
	case existing.InProgressExpiresAt.IsZero():
		logger.WarnContext(ctx, "idempotency: INPROGRESS record without in_progress_expiry; treated as locked until expiration",
			slog.Time("expiration", existing.ExpiresAt))
		return max(existing.ExpiresAt.Sub(now), 0)
	case !silent && !existing.Deadline.IsZero() && existing.Deadline.After(now):
		return existing.Deadline.Sub(now) + m.config.ClockSkewAllowance
	default:
		return existing.LeaseRemaining(now) + m.config.ClockSkewAllowance
	}
}

// run calls the handler under a held claim, renewing the lease while it runs, and
// completes or releases the record.
func (m *middleware) run(ctx context.Context, message *sqsworker.Message, claim Record, logger *slog.Logger) (err error) {
	slot := &resultSlot{}
	handlerCtx, cancel := context.WithCancelCause(context.WithValue(ctx, resultKey{}, slot))
	defer cancel(nil)
	stop := m.startHeartbeat(handlerCtx, message, claim, cancel, logger)
	returned := false
	defer func() {
		if !returned { // the handler panicked (or called runtime.Goexit): free the key, let the panic go on
			stop()
			m.release(ctx, claim, logger)
		}
	}()
	err = m.next.Handle(handlerCtx, message)
	returned = true
	stop() // before completing: a renewal never races the completion
	if err != nil {
		m.release(ctx, claim, logger)
		return err
	}
	completed := claim
	completed.Status = StatusCompleted
	completed.ExpiresAt = ceilSecond(m.config.Clock.Now().Add(m.config.TTL))
	completed.InProgressExpiresAt = time.Time{}
	completed.Deadline = time.Time{}
	completed.Result = slot.get()
	storeCtx, cancelStore := context.WithTimeout(context.WithoutCancel(ctx), m.config.StoreTimeout)
	defer cancelStore()
	if err := m.store.Complete(storeCtx, completed); err != nil {
		logger.ErrorContext(ctx, "idempotency: handler succeeded but completing the record failed; a later duplicate may run again once the lease ends", slog.Any("error", err))
		m.observe(ctx, message, Event{Kind: EventCompleteFailed, Key: claim.Key, Err: err})
		return nil
	}
	logger.DebugContext(ctx, "idempotency: completed")
	return nil
}

// startHeartbeat starts the goroutine that renews the claim's lease every
// InProgressTTL/3 until the returned stop is called (stop waits for it to end; calling
// it again does nothing). A renewal is conditioned on the lease; when the lease was
// lost, the heartbeat ends and cancels the handler's context with ErrLeaseLost. Other
// renewal failures are logged and retried at the next tick.
func (m *middleware) startHeartbeat(ctx context.Context, message *sqsworker.Message, claim Record, cancel context.CancelCauseFunc, logger *slog.Logger) (stop func()) {
	interval := m.config.InProgressTTL / 3
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		renewed := claim
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			leaseEnd := m.leaseEnd(m.config.Clock.Now(), claim.Deadline)
			if !leaseEnd.After(renewed.InProgressExpiresAt) {
				continue // at the deadline already
			}
			next := renewed
			next.InProgressExpiresAt = leaseEnd
			next.ExpiresAt = ceilSecond(later(renewed.ExpiresAt, leaseEnd))
			renewCtx, cancelRenew := context.WithTimeout(context.WithoutCancel(ctx), interval)
			err := m.store.Renew(renewCtx, next)
			cancelRenew()
			switch {
			case err == nil:
				renewed = next
			case errors.Is(err, ErrLeaseLost):
				logger.ErrorContext(ctx, "idempotency: lease lost while the handler runs (taken over after a missed renewal?); cancelling the handler", slog.Any("error", err))
				m.observe(ctx, message, Event{Kind: EventLeaseLost, Key: claim.Key, Err: err})
				cancel(fmt.Errorf("idempotency: key %q: %w", claim.Key, ErrLeaseLost))
				return
			default:
				logger.WarnContext(ctx, "idempotency: renewing the lease failed; retrying at the next heartbeat", slog.Any("error", err),
					slog.Time("lease_end", renewed.InProgressExpiresAt))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// observe fills ev's time and message fields and tells the observer.
func (m *middleware) observe(ctx context.Context, message *sqsworker.Message, ev Event) {
	ev.Time = m.config.Clock.Now()
	ev.MessageID, ev.Queue = message.ID, message.QueueURL
	m.config.Observer.ObserveIdempotency(ctx, ev)
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

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
