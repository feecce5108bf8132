package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/txjoin"
)

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
			return false, m.storeFailed(ctx, message, claim.Key, "claim failed", err, logger)
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
				return false, m.storeFailed(ctx, message, claim.Key, "reading the conflicting record failed", err, logger)
			}
		}
		if existing.Status == StatusInProgress && existing.Lease == claim.Lease {
			// Our own write: the SDK retried a PutItem whose first attempt succeeded but
			// whose response was lost, and the retry failed its own condition.
			logger.DebugContext(ctx, "idempotency: claimed (the conflicting record is our own retried write)")
			if existing.Interrupted > 0 && existing.InterruptedMessage == message.ID {
				claim.Interrupted, claim.InterruptedMessage = existing.Interrupted, message.ID // a takeover's
				message.Interrupted = existing.Interrupted
			}
			m.observe(ctx, message, Event{Kind: EventClaimed, Key: claim.Key})
			return true, nil
		}
		if store, ok := m.store.(InterruptionStore); ok && existing.TakeOverable(now.Add(-m.config.ClockSkewAllowance)) && !m.mismatch(*claim, existing) {
			claimed, err := m.takeOver(ctx, store, message, claim, existing, logger)
			if err != nil {
				return false, m.storeFailed(ctx, message, claim.Key, "taking over the interrupted record failed", err, logger)
			}
			if claimed {
				return true, nil
			}
			continue // taken by another claim meanwhile, or our own retried write: look again
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
		case errors.Is(err, ErrMalformedRecord):
			return false, m.storeFailed(ctx, message, claim.Key, "reading the record while waiting failed", err, logger)
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

// takeOver claims a record that keeps interrupted receives, writing the claim with the
// count when it is for the same message (those receives are then no attempts:
// Message.Interrupted), without it for another message. It reports whether the claim
// was written; false with no error means a conflict (another claim took the record
// first, or a retried write of ours that the caller recognises when it looks again).
func (m *middleware) takeOver(ctx context.Context, store InterruptionStore, message *sqsworker.Message, claim *Record, existing Record, logger *slog.Logger) (bool, error) {
	claim.Interrupted, claim.InterruptedMessage = 0, ""
	if existing.InterruptedMessage == message.ID {
		claim.Interrupted, claim.InterruptedMessage = existing.Interrupted, message.ID
	}
	err := store.TakeOver(ctx, *claim, existing.Lease)
	if _, conflict := errors.AsType[*AlreadyExistsError](err); conflict {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	message.Interrupted = claim.Interrupted
	logger.DebugContext(ctx, "idempotency: claimed, taking over the interrupted receives", slog.Int("interrupted", claim.Interrupted))
	m.observe(ctx, message, Event{Kind: EventClaimed, Key: claim.Key})
	return true, nil
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
		if join := txjoin.From(ctx); join != nil {
			if _, bound := join.Bound(); bound {
				join.Answer() // the completion stands for the outer middleware's writes
			}
		}
		logger.InfoContext(ctx, LogCompletedDuplicate)
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
	// A store that let an unknown status through (the DynamoDB store refuses it itself).
	err := &StoreError{Op: "get", Key: claim.Key, Err: fmt.Errorf("%w: status %q", ErrMalformedRecord, existing.Status)}
	return m.storeFailed(ctx, message, claim.Key, "claim failed", err, logger)
}

// storeFailed logs and reports a store failure that keeps the handler from running and
// returns it as the message's outcome (retryable). An item that is not an idempotency
// record is an error of its own: logged as one, never taken for a claim in progress.
func (m *middleware) storeFailed(ctx context.Context, message *sqsworker.Message, key, what string, err error, logger *slog.Logger) error {
	if errors.Is(err, ErrMalformedRecord) {
		logger.ErrorContext(ctx, "idempotency: the item under the key is not an idempotency record (another writer's?); the handler does not run",
			slog.Any("error", err))
		m.observe(ctx, message, Event{Kind: EventMalformedRecord, Key: key, Err: err})
		return err
	}
	logger.WarnContext(ctx, "idempotency: "+what, slog.Any("error", err))
	m.observe(ctx, message, Event{Kind: EventStoreError, Key: key, Err: err})
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
