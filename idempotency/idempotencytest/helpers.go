package idempotencytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

// The suite's helpers: records, keys and the checks its cases share.

// base is the suite's "now": a whole second, a day ahead of the wall clock, so records
// written to a real table with TTL enabled are not removed while the suite runs.
func base() time.Time {
	return time.Now().Add(24 * time.Hour).Truncate(time.Second).UTC()
}

func newKey(t *testing.T) string {
	return "idempotencytest-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + rand.Text()
}

// claim returns an in-progress record claimed at now with the given lease and TTL.
func claim(key string, now time.Time, lease, ttl time.Duration) idempotency.Record {
	return idempotency.Record{
		Key:                 key,
		Status:              idempotency.StatusInProgress,
		ExpiresAt:           now.Add(ttl),
		InProgressExpiresAt: now.Add(lease),
		Lease:               rand.Text(),
		PayloadHash:         "hash-" + key,
	}
}

// completed is what the store should hold after Complete(record with expiresAt, result).
func completed(record idempotency.Record, expiresAt time.Time, result []byte) idempotency.Record {
	record.Status = idempotency.StatusCompleted
	record.ExpiresAt = expiresAt
	record.InProgressExpiresAt = time.Time{}
	record.Deadline = time.Time{}
	record.Result = result
	return record
}

func ctx(t *testing.T) context.Context {
	return t.Context()
}

func mustPut(t *testing.T, store idempotency.Store, record idempotency.Record, now time.Time) {
	t.Helper()
	if err := store.PutInProgress(ctx(t), record, now); err != nil {
		t.Fatalf("PutInProgress(%q) at %s: %v", record.Key, now, err)
	}
}

func mustComplete(t *testing.T, store idempotency.Store, record idempotency.Record) {
	t.Helper()
	if err := store.Complete(ctx(t), record); err != nil {
		t.Fatalf("Complete(%q): %v", record.Key, err)
	}
}

// wantRecord checks that the store holds want for want.Key.
func wantRecord(t *testing.T, store idempotency.Store, want idempotency.Record) {
	t.Helper()
	got, err := store.Get(ctx(t), want.Key)
	if err != nil {
		t.Fatalf("Get(%q): %v", want.Key, err)
	}
	if diff := RecordDiff(want, got); diff != "" {
		t.Errorf("Get(%q) mismatch (-want +got):\n%s", want.Key, diff)
	}
}

func wantNoRecord(t *testing.T, store idempotency.Store, key string) {
	t.Helper()
	got, err := store.Get(ctx(t), key)
	if !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Get(%q) = %+v, %v; want an error matching ErrNotFound", key, got, err)
	}
}

// wantConflict checks that claiming record at now fails with an AlreadyExistsError for
// its key, whose Existing (when set) equals stored, and that stored is unchanged.
func wantConflict(t *testing.T, store idempotency.Store, record idempotency.Record, now time.Time, stored idempotency.Record) {
	t.Helper()
	err := store.PutInProgress(ctx(t), record, now)
	exists, ok := errors.AsType[*idempotency.AlreadyExistsError](err)
	if !ok {
		t.Fatalf("PutInProgress(%q) at %s = %v; want *AlreadyExistsError", record.Key, now, err)
	}
	if exists.Key != record.Key {
		t.Errorf("AlreadyExistsError.Key = %q, want %q", exists.Key, record.Key)
	}
	if exists.Existing != nil {
		if diff := RecordDiff(stored, *exists.Existing); diff != "" {
			t.Errorf("AlreadyExistsError.Existing mismatch (-want +got):\n%s", diff)
		}
	}
	wantRecord(t, store, stored)
}

// RecordDiff describes how got differs from want, field by field, after truncating
// times to the precision stores keep (seconds for ExpiresAt, milliseconds for
// InProgressExpiresAt); "" when they are equal. An empty Result equals a nil one.
func RecordDiff(want, got idempotency.Record) string {
	var diff strings.Builder
	field := func(name string, equal bool, want, got any) {
		if !equal {
			fmt.Fprintf(&diff, "  %s:\n  -\t%v\n  +\t%v\n", name, want, got)
		}
	}
	seconds := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.Unix()
	}
	milliseconds := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	field("Key", want.Key == got.Key, want.Key, got.Key)
	field("Status", want.Status == got.Status, want.Status, got.Status)
	field("ExpiresAt (epoch s)", seconds(want.ExpiresAt) == seconds(got.ExpiresAt), seconds(want.ExpiresAt), seconds(got.ExpiresAt))
	field("InProgressExpiresAt (epoch ms)", milliseconds(want.InProgressExpiresAt) == milliseconds(got.InProgressExpiresAt),
		milliseconds(want.InProgressExpiresAt), milliseconds(got.InProgressExpiresAt))
	field("Deadline (epoch ms)", milliseconds(want.Deadline) == milliseconds(got.Deadline),
		milliseconds(want.Deadline), milliseconds(got.Deadline))
	field("Lease", want.Lease == got.Lease, want.Lease, got.Lease)
	field("PayloadHash", want.PayloadHash == got.PayloadHash, want.PayloadHash, got.PayloadHash)
	field("Result", bytes.Equal(want.Result, got.Result), fmt.Sprintf("%q", want.Result), fmt.Sprintf("%q", got.Result))
	field("Interrupted", want.Interrupted == got.Interrupted, want.Interrupted, got.Interrupted)
	field("InterruptedMessage", want.InterruptedMessage == got.InterruptedMessage, want.InterruptedMessage, got.InterruptedMessage)
	return diff.String()
}
