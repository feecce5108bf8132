package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
)

// leaseEnd returns where a lease taken or renewed at now ends: now + InProgressTTL, but
// never past the handler's deadline (zero: none).
func (m *middleware) leaseEnd(now, deadline time.Time) time.Time {
	end := now.Add(m.config.InProgressTTL)
	if !deadline.IsZero() && end.After(deadline) {
		return deadline
	}
	return end
}

// startHeartbeat starts the goroutine that renews the claim's lease every
// InProgressTTL/3 while the lease can still be renewed, and returns stop, which ends it
// and waits for it (calling it again does nothing). A renewal is conditioned on the
// lease. The heartbeat ends on its own, so a handler that ignores its context costs no
// goroutine but its own:
//
//   - when the handler's context (ctx) is done: the host gave the run up (its deadline,
//     a drain or a shutdown), so the lease is left to end InProgressTTL after its last
//     renewal;
//   - when the lease has reached the handler's deadline (it is never renewed past it);
//   - when a renewal finds the lease lost: it then cancels the handler's context with
//     ErrLeaseLost.
//
// Other renewal failures are logged and retried at the next tick.
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
			case <-ctx.Done():
				logger.DebugContext(ctx, "idempotency: the handler's context ended; no more lease renewals",
					slog.Any("cause", context.Cause(ctx)), slog.Time("lease_end", renewed.InProgressExpiresAt))
				return
			case <-ticker.C:
			}
			leaseEnd := m.leaseEnd(m.config.Clock.Now(), claim.Deadline)
			if !leaseEnd.After(renewed.InProgressExpiresAt) {
				if !claim.Deadline.IsZero() && !renewed.InProgressExpiresAt.Before(claim.Deadline) {
					logger.DebugContext(ctx, "idempotency: the lease reached the handler's deadline; no more renewals",
						slog.Time("lease_end", renewed.InProgressExpiresAt))
					return
				}
				continue // the clock stepped back
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
