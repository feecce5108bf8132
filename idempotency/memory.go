package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryStore is a [Store] in process memory with the same semantics as
// [DynamoDBStore]: conditional claims, lease-conditioned updates and deletes, expiry
// computed from the times passed in. It serves unit tests and single-process local runs;
// it is not shared between processes. The zero value is ready to use and safe for
// concurrent use.
type MemoryStore struct {
	// DisableFastPath makes PutInProgress return [*AlreadyExistsError] without the
	// existing record (Existing nil), like DynamoDBStore with WithFastPath(false), so the
	// caller's read-after-conflict path runs. Set it before first use.
	DisableFastPath bool

	mu      sync.Mutex
	records map[string]Record
}

var _ InterruptionStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{}
}

// PutInProgress implements [Store.PutInProgress].
func (s *MemoryStore) PutInProgress(ctx context.Context, record Record, now time.Time) error {
	return s.put(ctx, record, func(existing Record) bool { return existing.Claimable(now) })
}

// TakeOver implements [InterruptionStore.TakeOver].
func (s *MemoryStore) TakeOver(ctx context.Context, record Record, lease string) error {
	return s.put(ctx, record, func(existing Record) bool { return existing.Lease == lease && existing.Interrupted > 0 })
}

// put writes the claim record when the key has no record or replaces tells it may
// replace the existing one.
func (s *MemoryStore) put(ctx context.Context, record Record, replaces func(existing Record) bool) error {
	if err := validateClaim(record); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "put", Key: record.Key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing, ok := s.records[record.Key]; ok && !replaces(existing) {
		conflict := &AlreadyExistsError{Key: record.Key}
		if !s.DisableFastPath {
			copied := existing.normalize()
			conflict.Existing = &copied
		}
		return conflict
	}
	if s.records == nil {
		s.records = make(map[string]Record)
	}
	s.records[record.Key] = record.normalize()
	return nil
}

// Interrupt implements [InterruptionStore.Interrupt].
func (s *MemoryStore) Interrupt(ctx context.Context, record Record) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "interrupt", Key: record.Key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.records[record.Key]
	if !ok || stored.Lease != record.Lease {
		return fmt.Errorf("%w: interrupting key %q", ErrLeaseLost, record.Key)
	}
	stored.InProgressExpiresAt, stored.Deadline = interruptedLeaseEnd, time.Time{}
	stored.Interrupted, stored.InterruptedMessage = max(record.Interrupted, 1), record.InterruptedMessage
	s.records[record.Key] = stored.normalize()
	return nil
}

// Get implements [Store.Get].
func (s *MemoryStore) Get(ctx context.Context, key string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, &StoreError{Op: "get", Key: key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	record, ok := s.records[key]
	if !ok {
		return Record{}, fmt.Errorf("%w: key %q", ErrNotFound, key)
	}
	return record.normalize(), nil
}

// Complete implements [Store.Complete].
func (s *MemoryStore) Complete(ctx context.Context, record Record) error {
	if record.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: completion for key %q has no expiration", ErrInvalidRecord, record.Key)
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "complete", Key: record.Key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.records[record.Key]
	if !ok || stored.Lease != record.Lease {
		return fmt.Errorf("%w: completing key %q", ErrLeaseLost, record.Key)
	}
	stored.Status = StatusCompleted
	stored.ExpiresAt = record.ExpiresAt
	stored.InProgressExpiresAt = time.Time{}
	stored.Deadline = time.Time{}
	if len(record.Result) > 0 {
		stored.Result = record.Result
	}
	s.records[record.Key] = stored.normalize()
	return nil
}

// Delete implements [Store.Delete].
func (s *MemoryStore) Delete(ctx context.Context, key, lease string) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "delete", Key: key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.records[key]
	if !ok || stored.Lease != lease {
		return fmt.Errorf("%w: deleting key %q", ErrLeaseLost, key)
	}
	delete(s.records, key)
	return nil
}

// Renew implements [Store.Renew].
func (s *MemoryStore) Renew(ctx context.Context, record Record) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "renew", Key: record.Key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.records[record.Key]
	if !ok || stored.Lease != record.Lease || stored.Status != StatusInProgress {
		return fmt.Errorf("%w: renewing key %q", ErrLeaseLost, record.Key)
	}
	stored.InProgressExpiresAt = record.InProgressExpiresAt
	stored.ExpiresAt = record.ExpiresAt
	s.records[record.Key] = stored.normalize()
	return nil
}
