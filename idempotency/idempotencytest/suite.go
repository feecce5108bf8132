// Package idempotencytest holds the conformance suite every [idempotency.Store] must
// pass. The package's own tests run it against idempotency.MemoryStore and against
// idempotency.DynamoDBStore on the local DynamoDB emulator; run it against your own
// Store the same way:
//
//	func TestMyStore(t *testing.T) {
//		idempotencytest.RunStoreTests(t, func(t *testing.T) idempotency.Store {
//			return newMyStore(t)
//		})
//	}
package idempotencytest

import (
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

// RunStoreTests runs the conformance suite, each case as a parallel subtest. newStore is
// called once per subtest; it may return a fresh store or a shared one (keys are unique
// per case). Expiry is driven only by the times the suite passes in, never by sleeping:
// a conforming store must not consult the wall clock for it.
//
// [idempotency.AlreadyExistsError].Existing may be nil (the store could not return the
// record with the failed claim); when set, it must equal the stored record.
func RunStoreTests(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	for _, tc := range storeTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

type storeTest struct {
	name string
	run  func(t *testing.T, store idempotency.Store)
}

var storeTests = []storeTest{
	{"ClaimNewKey", testClaimNewKey},
	{"ClaimRejectedWhileLeaseLive", testClaimRejectedWhileLeaseLive},
	{"LeaseExpiryIsStrictMilliseconds", testLeaseExpiryIsStrict},
	{"ExpiredRecordIsClaimableStrictSeconds", testExpiredRecordIsClaimable},
	{"CompletedBlocksClaimsUntilExpiration", testCompletedBlocksClaims},
	{"CompleteStoresResultAndDropsLeaseExpiry", testCompleteStoresResult},
	{"CompleteWithoutResult", testCompleteWithoutResult},
	{"CompleteWithAnOversizedResult", testCompleteWithAnOversizedResult},
	{"CompleteWithOtherLeaseRejected", testCompleteWithOtherLease},
	{"CompleteMissingRejected", testCompleteMissing},
	{"TakeoverLocksOutOldLease", testTakeoverLocksOutOldLease},
	{"DeleteWithLease", testDeleteWithLease},
	{"DeleteWithOtherLeaseRejected", testDeleteWithOtherLease},
	{"DeleteMissingRejected", testDeleteMissing},
	{"GetMissing", testGetMissing},
	{"InvalidClaimsWriteNothing", testInvalidClaims},
	{"ConcurrentClaimsOneWinner", testConcurrentClaims},
	{"BinaryResultRoundTrip", testBinaryResult},
	{"ClaimReplacesExpiredRecordWhole", testClaimReplacesWhole},
	{"RenewExtendsTheLease", testRenew},
	{"RenewRejectedForOtherLeaseOrCompleted", testRenewRejected},
	{"InterruptKeepsTheCountForTheNextClaim", testInterrupt},
}

// testInterrupt (an [idempotency.InterruptionStore] only): Interrupt with the claim's
// lease keeps the record, its lease ended and the count set; Interrupt with another
// lease is refused; PutInProgress then conflicts (the record is not claimable, so the
// count is not lost); TakeOver with another lease conflicts, and with the record's lease
// writes the new claim, its count included.
func testInterrupt(t *testing.T, store idempotency.Store) {
	interruptions, ok := store.(idempotency.InterruptionStore)
	if !ok {
		t.Skip("the store does not keep interruptions (idempotency.InterruptionStore)")
	}
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	other := first
	other.Lease, other.Interrupted, other.InterruptedMessage = "another-lease", 1, "m-1"
	if err := interruptions.Interrupt(ctx(t), other); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Interrupt with another lease: %v, want ErrLeaseLost", err)
	}
	interrupted := first
	interrupted.Interrupted, interrupted.InterruptedMessage = 2, "m-1"
	if err := interruptions.Interrupt(ctx(t), interrupted); err != nil {
		t.Fatalf("Interrupt with the lease: %v", err)
	}
	want := interrupted
	want.InProgressExpiresAt = time.UnixMilli(1)
	wantRecord(t, store, want)
	second := claim(first.Key, now, 10*time.Second, time.Hour)
	wantConflict(t, store, second, now, want)
	var exists *idempotency.AlreadyExistsError
	if err := interruptions.TakeOver(ctx(t), second, "another-lease"); !errors.As(err, &exists) {
		t.Errorf("TakeOver with another lease: %v, want AlreadyExistsError", err)
	}
	second.Interrupted, second.InterruptedMessage = 2, "m-1"
	if err := interruptions.TakeOver(ctx(t), second, first.Lease); err != nil {
		t.Fatalf("TakeOver with the record's lease: %v", err)
	}
	wantRecord(t, store, second)
}

func testClaimNewKey(t *testing.T, store idempotency.Store) {
	now := base()
	record := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, record, now)
	wantRecord(t, store, record)
}

func testClaimRejectedWhileLeaseLive(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	for _, at := range []time.Duration{0, time.Second, 10*time.Second - time.Millisecond} {
		wantConflict(t, store, claim(first.Key, now.Add(at), 10*time.Second, time.Hour), now.Add(at), first)
	}
}

func testLeaseExpiryIsStrict(t *testing.T, store idempotency.Store) {
	now := base().Add(250 * time.Millisecond)
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	leaseEnd := first.InProgressExpiresAt
	// in_progress_expiry < :now_ms is false when they are equal.
	wantConflict(t, store, claim(first.Key, leaseEnd, 10*time.Second, time.Hour), leaseEnd, first)
	takeover := claim(first.Key, leaseEnd.Add(time.Millisecond), 10*time.Second, time.Hour)
	mustPut(t, store, takeover, leaseEnd.Add(time.Millisecond))
	wantRecord(t, store, takeover)
}

func testExpiredRecordIsClaimable(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(time.Hour), []byte("r1"))
	mustComplete(t, store, done)
	// expiration < :now (seconds) is false within the expiration second.
	within := now.Add(time.Hour + 999*time.Millisecond)
	wantConflict(t, store, claim(first.Key, within, 10*time.Second, time.Hour), within, done)
	after := now.Add(time.Hour + time.Second)
	second := claim(first.Key, after, 10*time.Second, time.Hour)
	mustPut(t, store, second, after)
	wantRecord(t, store, second)
}

func testCompletedBlocksClaims(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(time.Hour), []byte("result"))
	mustComplete(t, store, done)
	// Long after the old lease ended, the completed record still blocks claims.
	later := now.Add(30 * time.Minute)
	wantConflict(t, store, claim(first.Key, later, 10*time.Second, time.Hour), later, done)
}

func testCompleteStoresResult(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(2*time.Hour), []byte(`{"status":200}`))
	mustComplete(t, store, done)
	wantRecord(t, store, done)
}

func testCompleteWithoutResult(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(time.Hour), nil)
	mustComplete(t, store, done)
	wantRecord(t, store, done)
}

// testCompleteWithAnOversizedResult: a result over a store's item limit (1 MiB here,
// more than DynamoDB's 400 KB item) is either stored whole or refused with
// ErrResultTooLarge, writing nothing; the record can then complete without it.
func testCompleteWithAnOversizedResult(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(time.Hour), make([]byte, 1<<20))
	err := store.Complete(ctx(t), done)
	if err == nil {
		wantRecord(t, store, done)
		return
	}
	if !errors.Is(err, idempotency.ErrResultTooLarge) {
		t.Fatalf("Complete with a 1 MiB result = %v; want nil or an error matching ErrResultTooLarge", err)
	}
	wantRecord(t, store, first)
	done.Result = nil
	mustComplete(t, store, done)
	wantRecord(t, store, done)
}

func testCompleteWithOtherLease(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	other := completed(first, now.Add(time.Hour), []byte("x"))
	other.Lease = rand.Text()
	if err := store.Complete(ctx(t), other); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete with another lease = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, first)
}

func testCompleteMissing(t *testing.T, store idempotency.Store) {
	now := base()
	record := completed(claim(newKey(t), now, 10*time.Second, time.Hour), now.Add(time.Hour), []byte("x"))
	if err := store.Complete(ctx(t), record); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete of a missing key = %v; want an error matching ErrLeaseLost", err)
	}
	wantNoRecord(t, store, record.Key)
}

func testTakeoverLocksOutOldLease(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	at := now.Add(time.Minute)
	second := claim(first.Key, at, 10*time.Second, time.Hour)
	mustPut(t, store, second, at)
	if err := store.Complete(ctx(t), completed(first, at.Add(time.Hour), []byte("stale"))); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Complete with the taken-over lease = %v; want an error matching ErrLeaseLost", err)
	}
	if err := store.Delete(ctx(t), first.Key, first.Lease); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Delete with the taken-over lease = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, second)
}

func testDeleteWithLease(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	if err := store.Delete(ctx(t), first.Key, first.Lease); err != nil {
		t.Fatalf("Delete with the lease: %v", err)
	}
	wantNoRecord(t, store, first.Key)
	// The key can be claimed again at once.
	second := claim(first.Key, now, 10*time.Second, time.Hour)
	mustPut(t, store, second, now)
	wantRecord(t, store, second)
}

func testDeleteWithOtherLease(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	if err := store.Delete(ctx(t), first.Key, rand.Text()); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Delete with another lease = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, first)
	done := completed(first, now.Add(time.Hour), []byte("kept"))
	mustComplete(t, store, done)
	if err := store.Delete(ctx(t), first.Key, rand.Text()); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Delete of a completed record with another lease = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, done)
}

func testDeleteMissing(t *testing.T, store idempotency.Store) {
	key := newKey(t)
	if err := store.Delete(ctx(t), key, rand.Text()); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Delete of a missing key = %v; want an error matching ErrLeaseLost", err)
	}
}

func testGetMissing(t *testing.T, store idempotency.Store) {
	wantNoRecord(t, store, newKey(t))
}

func testInvalidClaims(t *testing.T, store idempotency.Store) {
	now := base()
	tests := []struct {
		name   string
		mutate func(*idempotency.Record)
	}{
		{"NoInProgressExpiry", func(r *idempotency.Record) { r.InProgressExpiresAt = time.Time{} }},
		{"NoExpiration", func(r *idempotency.Record) { r.ExpiresAt = time.Time{} }},
		{"NoLease", func(r *idempotency.Record) { r.Lease = "" }},
		{"StatusCompleted", func(r *idempotency.Record) { r.Status = idempotency.StatusCompleted }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			record := claim(newKey(t), now, 10*time.Second, time.Hour)
			tc.mutate(&record)
			if err := store.PutInProgress(ctx(t), record, now); !errors.Is(err, idempotency.ErrInvalidRecord) {
				t.Fatalf("PutInProgress = %v; want an error matching ErrInvalidRecord", err)
			}
			wantNoRecord(t, store, record.Key)
		})
	}
	record := claim("", now, 10*time.Second, time.Hour)
	if err := store.PutInProgress(ctx(t), record, now); !errors.Is(err, idempotency.ErrInvalidRecord) {
		t.Fatalf("PutInProgress with an empty key = %v; want an error matching ErrInvalidRecord", err)
	}
}

func testConcurrentClaims(t *testing.T, store idempotency.Store) {
	const claimants = 16
	now := base()
	key := newKey(t)
	var wg sync.WaitGroup
	results := make([]error, claimants)
	records := make([]idempotency.Record, claimants)
	for i := range claimants {
		records[i] = claim(key, now, 10*time.Second, time.Hour)
		wg.Go(func() { results[i] = store.PutInProgress(ctx(t), records[i], now) })
	}
	wg.Wait()
	winners := 0
	var winner idempotency.Record
	for i, err := range results {
		switch _, exists := errors.AsType[*idempotency.AlreadyExistsError](err); {
		case err == nil:
			winners++
			winner = records[i]
		case !exists:
			t.Errorf("claimant %d: %v; want nil or *AlreadyExistsError", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent claims succeeded; want exactly 1", winners, claimants)
	}
	wantRecord(t, store, winner)
}

func testBinaryResult(t *testing.T, store idempotency.Store) {
	now := base()
	result := make([]byte, 256)
	for i := range result {
		result[i] = byte(i)
	}
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	done := completed(first, now.Add(time.Hour), result)
	mustComplete(t, store, done)
	wantRecord(t, store, done)
}

func testClaimReplacesWhole(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	mustComplete(t, store, completed(first, now.Add(time.Hour), []byte("old result")))
	after := now.Add(2 * time.Hour)
	second := claim(first.Key, after, 10*time.Second, time.Hour)
	second.PayloadHash = "" // validation off: no hash attribute at all
	mustPut(t, store, second, after)
	wantRecord(t, store, second) // no old result, no old hash
}

func testRenew(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	first.Deadline = now.Add(time.Minute)
	mustPut(t, store, first, now)
	renewed := first
	renewed.InProgressExpiresAt = now.Add(20 * time.Second)
	renewed.ExpiresAt = now.Add(2 * time.Hour)
	if err := store.Renew(ctx(t), renewed); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	wantRecord(t, store, renewed)
	// The renewed lease blocks a claim the old lease end would have allowed.
	at := now.Add(15 * time.Second)
	wantConflict(t, store, claim(first.Key, at, 10*time.Second, time.Hour), at, renewed)
}

func testRenewRejected(t *testing.T, store idempotency.Store) {
	now := base()
	first := claim(newKey(t), now, 10*time.Second, time.Hour)
	mustPut(t, store, first, now)
	other := first
	other.Lease = rand.Text()
	other.InProgressExpiresAt = now.Add(time.Minute)
	if err := store.Renew(ctx(t), other); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Renew with another lease = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, first)
	done := completed(first, now.Add(time.Hour), []byte("r"))
	mustComplete(t, store, done)
	late := first
	late.InProgressExpiresAt = now.Add(time.Minute)
	if err := store.Renew(ctx(t), late); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Renew of a completed record = %v; want an error matching ErrLeaseLost", err)
	}
	wantRecord(t, store, done)
	if err := store.Renew(ctx(t), claim(newKey(t), now, time.Second, time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Renew of a missing key = %v; want an error matching ErrLeaseLost", err)
	}
}
