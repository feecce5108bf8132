package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

var (
	// ErrResultTooLarge matches the error of [SetResult] for a result over
	// MaxResultBytes when the Store has no Config.LargeResults, or over
	// MaxLargeResultBytes.
	ErrResultTooLarge = errors.New("jobs: result too large for the job record")
	// ErrProgressTooLarge matches the error of [Progress] for a document over
	// MaxProgressBytes.
	ErrProgressTooLarge = errors.New("jobs: progress document too large")
	// ErrNoRecord matches the error of [Progress] and [SetResult] called outside a
	// handler wrapped in [Store.Middleware].
	ErrNoRecord = errors.New("jobs: not in a job recorded by jobs.Store.Middleware")
)

// attempt is what the middleware keeps of one running attempt, for Progress and
// SetResult.
type attempt struct {
	store    *Store
	id       string
	interval time.Duration
	now      func() time.Time

	mu        sync.Mutex
	lastWrite time.Time // of progress; zero before the first
	pending   []byte    // progress not written yet (the rate limit held it back)
	result    []byte
	ref       *ResultRef // of a result kept in S3 (then result is nil)
}

type attemptKey struct{}

func attemptOf(ctx context.Context) (*attempt, error) {
	a, ok := ctx.Value(attemptKey{}).(*attempt)
	if !ok {
		return nil, ErrNoRecord
	}
	return a, nil
}

// Progress records v, encoded as JSON, as the running job's progress. Writes are
// rate-limited to one per MiddlewareConfig.ProgressInterval per job: a call within the
// interval after a write only keeps v, and the latest kept document is written by the
// next call past the interval or with the job's end, so the record always ends with
// the last progress reported. Errors: [ErrNoRecord] outside a recorded job, v's
// encoding error, [ErrProgressTooLarge] past MaxProgressBytes, the write's error.
func Progress(ctx context.Context, v any) error {
	a, err := attemptOf(ctx)
	if err != nil {
		return err
	}
	document, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jobs: encoding progress: %w", err)
	}
	if len(document) > MaxProgressBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrProgressTooLarge, len(document), MaxProgressBytes)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if !a.lastWrite.IsZero() && now.Sub(a.lastWrite) < a.interval {
		a.pending = document
		return nil
	}
	a.lastWrite, a.pending = now, nil
	return a.store.progress(ctx, a.id, document)
}

// SetResult keeps v, encoded as JSON, as the job's result, written with the job's end
// (no write of its own), and hands it to [idempotency.SetResult] too, so a job under the
// idempotency middleware keeps it in its completed idempotency record. The last call
// wins.
//
// A document over MaxResultBytes (up to MaxLargeResultBytes) is kept in S3 when the
// job's Store has Config.LargeResults: SetResult writes it at once (one PutObject,
// under the handler's ctx) to the location's prefix + job id + "/" + its SHA-256, and
// the record, and the idempotency record, keep only its [ResultRef] (the idempotency
// record as the document [ParseResultRef] reads, so duplicates receive the
// reference). Read it with [Store.Result]. This needs the job middleware
// ([Store.Middleware]): under the idempotency middleware alone a large result is
// refused.
//
// Errors: [ErrNoRecord] outside both a recorded job and the idempotency middleware, v's
// encoding error, [ErrResultTooLarge] past MaxResultBytes without Config.LargeResults
// (or outside [Store.Middleware]) or past MaxLargeResultBytes, [ErrResultJobID] for a
// job id that cannot name an S3 object, [ErrReservedResult], PutObject's error. On an
// error nothing is kept and an earlier result stands.
func SetResult(ctx context.Context, v any) error {
	document, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jobs: encoding the result: %w", err)
	}
	if _, reserved := ParseResultRef(document); reserved {
		return ErrReservedResult
	}
	a, attemptErr := attemptOf(ctx)
	var ref *ResultRef
	if len(document) > MaxResultBytes {
		switch {
		case len(document) > MaxLargeResultBytes:
			return fmt.Errorf("%w: %d bytes, at most %d even in S3", ErrResultTooLarge, len(document), MaxLargeResultBytes)
		case attemptErr != nil || a.store.config.LargeResults == nil:
			return fmt.Errorf("%w: %d bytes, at most %d (set jobs.Config.LargeResults to keep larger ones in S3)", ErrResultTooLarge, len(document), MaxResultBytes)
		}
		stored, err := a.store.putResult(ctx, a.id, document)
		if err != nil {
			return err
		}
		ref, document = &stored, stored.refDocument()
	}
	kept := idempotency.SetResult(ctx, document) // the idempotency record keeps it too, when there is one
	if attemptErr != nil {
		if kept {
			return nil
		}
		return attemptErr
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ref != nil {
		a.result, a.ref = nil, ref
	} else {
		a.result, a.ref = document, nil
	}
	return nil
}

// outcome returns the result (a document, or a reference to one in S3) and the
// progress not yet written, for the end's write.
func (a *attempt) outcome() (result []byte, ref *ResultRef, progress []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.result, a.ref, a.pending
}
