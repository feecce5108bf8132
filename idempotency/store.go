package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store keeps idempotency records. Implementations must make PutInProgress atomic (one
// conditional write) and condition Complete and Delete on the record's lease, so that a
// claim that lost its lease can never change or remove the record of the claim that
// took it over. [DynamoDBStore] and [MemoryStore] implement it; the package
// idempotencytest checks any implementation with one conformance suite.
type Store interface {
	// PutInProgress claims record.Key by writing record (Status StatusInProgress, a
	// non-zero InProgressExpiresAt, a fresh Lease). It succeeds when no record exists for
	// the key or the existing one is claimable at now (see [Record.Claimable]). Otherwise
	// it returns an [*AlreadyExistsError], whose Existing holds the record that blocked
	// the claim when the store could return it in the same call (nil otherwise). Backend
	// failures are returned as [*StoreError]. It rejects records that are not in
	// progress or lack a lease, a lease expiry or an expiration ([ErrInvalidRecord]),
	// writing nothing.
	PutInProgress(ctx context.Context, record Record, now time.Time) error
	// Get reads the record for key with a strongly consistent read. It returns an error
	// matching [ErrNotFound] when there is none, and [*StoreError] on backend failures;
	// for an item that is not an idempotency record, that error matches
	// [ErrMalformedRecord] (PutInProgress's, too, when such an item blocks the claim).
	// Get does not filter expired records; callers decide with the record's methods.
	Get(ctx context.Context, key string) (Record, error)
	// Complete marks the record of record.Key completed, with record.ExpiresAt as its
	// new expiration and record.Result as its stored result (none when empty), and removes
	// its lease expiry, provided the stored lease equals record.Lease. Otherwise (another
	// claim took the key over, or the record is gone) it returns an error matching
	// [ErrLeaseLost] and changes nothing. A store with an item size limit returns an error
	// matching [ErrResultTooLarge], changing nothing, when the result does not fit; the
	// middleware then completes the record without it.
	Complete(ctx context.Context, record Record) error
	// Delete removes the record for key provided its lease equals lease; otherwise it
	// returns an error matching [ErrLeaseLost] and removes nothing.
	Delete(ctx context.Context, key, lease string) error
	// Renew extends a running claim: it sets the lease expiry of record.Key to
	// record.InProgressExpiresAt and its expiration to record.ExpiresAt, provided the
	// stored record is in progress under record.Lease. Otherwise (completed, taken over
	// or gone) it returns an error matching [ErrLeaseLost] and changes nothing. The
	// middleware calls it from its heartbeat while the handler runs.
	Renew(ctx context.Context, record Record) error
}

// InterruptionStore is a [Store] that keeps, between the attempts at a message, how
// many of its receives were interrupted by their host (Record.Interrupted), so the
// middleware can set [sqsworker.Message].Interrupted and those receives count as no
// attempts ([sqsworker.JobMaxAttempts]). [DynamoDBStore] and [MemoryStore] implement
// it; with a store that does not, every receive counts as an attempt. A record that
// keeps interrupted receives is not claimable by PutInProgress while unexpired (see
// [Record.Claimable]): its next claim conflicts, reads it, and takes it over.
type InterruptionStore interface {
	Store
	// Interrupt ends the claim of record.Key without deleting the record, provided the
	// stored lease equals record.Lease: it stays in progress with its lease ended and
	// keeps record.Interrupted (at least 1) and record.InterruptedMessage. Otherwise it
	// returns an error matching [ErrLeaseLost] and changes nothing. It is one write, in
	// place of the Delete that ends a failed attempt.
	Interrupt(ctx context.Context, record Record) error
	// TakeOver writes the claim record (as PutInProgress does; record.Interrupted is
	// written with it) over a stored record that keeps interrupted receives, provided
	// its lease equals lease. Otherwise it returns an [*AlreadyExistsError] (Existing as
	// for PutInProgress) and writes nothing.
	TakeOver(ctx context.Context, record Record, lease string) error
}

var (
	// ErrAlreadyInProgress matches (with errors.Is) the error the middleware returns for
	// a duplicate whose original still holds an unexpired lease. The same error is a
	// [*sqsworker.DeferError] (reason "IdempotencyInProgress"): the host makes the
	// message visible again when the lease ends, counted as deferred, not failed.
	ErrAlreadyInProgress = errors.New("idempotency: already in progress")
	// ErrPayloadMismatch matches the error returned for a message whose key has a record
	// with a different payload hash. The error is also a [*sqsworker.PermanentError]
	// with reason "IdempotencyPayloadMismatch": the message goes to the dead-letter queue.
	ErrPayloadMismatch = errors.New("idempotency: payload does not match the stored record")
	// ErrInsufficientTime matches the error returned when the handler's context has less
	// than Config.MinRemaining left: nothing is written and the handler is not called.
	// It is an ordinary (retryable) failure.
	ErrInsufficientTime = errors.New("idempotency: insufficient time left to claim")
	// ErrKeyMissing matches the error returned when a message has no idempotency key.
	// Unless Config.KeyOptional is set, that error is also a [*sqsworker.PermanentError]
	// with reason "IdempotencyKeyMissing".
	ErrKeyMissing = errors.New("idempotency: key missing")
	// ErrInconsistentState matches the error returned when a claim kept conflicting with
	// a record that then turned out to be absent or claimable (it changed between the
	// calls) for three attempts in a row. It is retryable.
	ErrInconsistentState = errors.New("idempotency: inconsistent record state")
	// ErrNotFound matches the error [Store.Get] returns when the key has no record.
	ErrNotFound = errors.New("idempotency: record not found")
	// ErrLeaseLost matches the error [Store.Complete] and [Store.Delete] return when the
	// record no longer carries the caller's lease (taken over, or gone).
	ErrLeaseLost = errors.New("idempotency: lease lost")
	// ErrMalformedRecord matches the error (a [*StoreError]) for an item under an
	// idempotency key that is not an idempotency record: an attribute missing or of the
	// wrong type, or an unknown status, such as another writer's item. The middleware
	// logs it, does not run the handler and returns the error (retryable): such an item
	// is never taken for a claim in progress, nor overwritten while it is unexpired.
	// Inspect it with `sqsworker idempotency get`, delete it with `delete --force`.
	ErrMalformedRecord = errors.New("idempotency: the item is not an idempotency record")
	// ErrResultTooLarge matches the error [Store.Complete] returns when the result set
	// with [SetResult] would make the record larger than the store can keep (DynamoDB:
	// 400 KB per item). Nothing was written.
	ErrResultTooLarge = errors.New("idempotency: result too large for the record")
	// ErrInvalidRecord matches the error [Store.PutInProgress] returns for a record it
	// refuses to write (not in progress, no lease, no lease expiry or expiration, empty
	// key), and [Store.Complete] for a record without expiration.
	ErrInvalidRecord = errors.New("idempotency: invalid record")
)

// AlreadyExistsError is returned by [Store.PutInProgress] when the key holds a record
// that cannot be claimed.
type AlreadyExistsError struct {
	// Key is the key that was claimed.
	Key string
	// Existing is the record that blocked the claim, when the store returned it with the
	// failed write (DynamoDB's ReturnValuesOnConditionCheckFailure=ALL_OLD). Nil when it
	// did not; the caller then reads the record with [Store.Get].
	Existing *Record
}

// Error returns "idempotency: record for key "K" already exists".
func (e *AlreadyExistsError) Error() string {
	return fmt.Sprintf("idempotency: record for key %q already exists", e.Key)
}

// StoreError wraps a failure of the storage backend (network, throttling, permissions,
// a malformed item). It is retryable.
type StoreError struct {
	// Op is the store operation: "put", "get", "complete", "delete" or "renew".
	Op string
	// Key is the idempotency key the operation was for.
	Key string
	// Err is the backend's error.
	Err error
}

// Error returns "idempotency: store Op for key "K": Err".
func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: store %s for key %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the backend's error.
func (e *StoreError) Unwrap() error { return e.Err }

// validateClaim checks a record before PutInProgress writes it.
func validateClaim(record Record) error {
	switch {
	case record.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidRecord)
	case record.Status != StatusInProgress:
		return fmt.Errorf("%w: claim for key %q has status %q, want %q", ErrInvalidRecord, record.Key, record.Status, StatusInProgress)
	case record.InProgressExpiresAt.IsZero():
		return fmt.Errorf("%w: claim for key %q has no in-progress expiry", ErrInvalidRecord, record.Key)
	case record.ExpiresAt.IsZero():
		return fmt.Errorf("%w: claim for key %q has no expiration", ErrInvalidRecord, record.Key)
	case record.Lease == "":
		return fmt.Errorf("%w: claim for key %q has no lease", ErrInvalidRecord, record.Key)
	}
	return nil
}
