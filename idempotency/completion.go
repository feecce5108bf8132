package idempotency

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/txjoin"
)

// run calls the handler under a held claim, renewing the lease while it runs, and
// completes or releases the record.
//
// With a join (package txjoin), the completion carries the outer middleware's writes.
func (m *middleware) run(ctx context.Context, message *sqsworker.Message, claim Record, join *txjoin.Join, logger *slog.Logger) (err error) {
	slot := &resultSlot{}
	handlerCtx, cancel := context.WithCancelCause(context.WithValue(ctx, resultKey{}, slot))
	defer cancel(nil)
	stop := m.startHeartbeat(handlerCtx, message, claim, cancel, logger)
	returned := false
	defer func() {
		if !returned { // the handler panicked (or called runtime.Goexit): free the key, let the panic go on
			stop()
			m.release(ctx, message, claim, false, logger)
		}
	}()
	err = m.next.Handle(handlerCtx, message)
	returned = true
	stop() // before completing: a renewal never races the completion
	if err != nil {
		// A host that ends the context because it is going away (a shutdown's drain
		// deadline, a Lambda deadline) interrupted the attempt: it did not fail.
		m.release(ctx, message, claim, errors.Is(context.Cause(ctx), sqsworker.ErrInterrupted), logger)
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
	err = m.complete(storeCtx, join, completed)
	if errors.Is(err, ErrResultTooLarge) && len(completed.Result) > 0 {
		// Completing matters more than the result: without a record a duplicate would run
		// the handler again once the lease ends.
		logger.WarnContext(ctx, "idempotency: the handler's result does not fit in the record; completed without it (duplicates get no result)",
			slog.Int("result_bytes", len(completed.Result)), slog.Any("error", err))
		completed.Result = nil
		err = m.complete(storeCtx, join, completed)
	}
	if err != nil {
		logger.ErrorContext(ctx, "idempotency: handler succeeded but completing the record failed; a later duplicate may run again once the lease ends", slog.Any("error", err))
		m.observe(ctx, message, Event{Kind: EventCompleteFailed, Key: claim.Key, Err: err})
		return nil
	}
	logger.DebugContext(ctx, "idempotency: completed")
	return nil
}

// release ends the claim, conditioned on its lease, so a retry can run at once instead
// of waiting for the lease to end: it deletes the record, or, when the attempt was
// interrupted by the host or earlier ones were (claim.Interrupted) and the store keeps
// interruptions, keeps it with the count (one increment for an interruption), so the
// next claim learns that those receives were no attempts. Failures are logged only.
func (m *middleware) release(ctx context.Context, message *sqsworker.Message, claim Record, interrupted bool, logger *slog.Logger) {
	storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.config.StoreTimeout)
	defer cancel()
	if store, ok := m.store.(InterruptionStore); ok && (interrupted || claim.Interrupted > 0) {
		kept := claim
		kept.InterruptedMessage = message.ID
		if interrupted {
			kept.Interrupted++
		}
		if err := store.Interrupt(storeCtx, kept); err != nil {
			logger.WarnContext(ctx, "idempotency: recording the interrupted receives failed; they count as attempts, and duplicates wait for the lease to end",
				slog.Int("interrupted", kept.Interrupted), slog.Any("error", err))
			return
		}
		logger.DebugContext(ctx, "idempotency: released, interrupted receives kept", slog.Int("interrupted", kept.Interrupted), slog.Bool("this_one", interrupted))
		return
	}
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
