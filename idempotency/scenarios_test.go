package idempotency_test

// Scenarios from CASES.md run through the middleware against DynamoDB on the emulator
// (moto), with a counting handler. Expiry is driven by a fake clock except in
// TestLeaseExpiryTakeoverRealTime, which waits for a short real lease by polling.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestDuplicateSendsOneEffect: concurrent and repeated deliveries of one key cause
// exactly one side effect; the concurrent copies are deferred while the original runs,
// and their redeliveries succeed without running once it has completed.
func TestDuplicateSendsOneEffect(t *testing.T) {
	t.Parallel()
	const copies = 20
	table := newEmulatorTable(t)
	var effects effects
	var others sync.WaitGroup
	others.Add(copies - 1)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		waitTimeout(t, &others, 10*time.Second) // hold the claim until every other copy has been turned away
		effects.add(field(t, m, "deliveryId"))
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("deliveryId")}))

	deliver := func(i int) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return handler.Handle(ctx, jsonMessage(fmt.Sprintf("m-%d", i), map[string]any{"deliveryId": "D-1"}))
	}
	outcomes := make([]sqsworker.Outcome, copies)
	var all sync.WaitGroup
	var ran atomic.Int64
	for i := range copies {
		all.Go(func() {
			outcomes[i] = sqsworker.Classify(deliver(i))
			if outcomes[i].Kind == sqsworker.OutcomeDelete {
				ran.Add(1)
			} else {
				others.Done()
			}
		})
	}
	all.Wait()
	kinds := map[sqsworker.OutcomeKind]int{}
	for i, outcome := range outcomes {
		kinds[outcome.Kind]++
		if outcome.Kind == sqsworker.OutcomeDefer {
			if outcome.Reason != "IdempotencyInProgress" || outcome.Delay <= 0 || outcome.Delay > 32*time.Second {
				t.Errorf("copy %d: deferred %s (%s); want IdempotencyInProgress within the 30 s lease + 2 s", i, outcome.Delay, outcome.Reason)
			}
		}
	}
	if kinds[sqsworker.OutcomeDelete] != 1 || kinds[sqsworker.OutcomeDefer] != copies-1 {
		t.Fatalf("outcomes = %v; want 1 delete and %d defer", kinds, copies-1)
	}
	// Redeliveries after completion return at once without running.
	for i := range copies {
		if err := deliver(i); err != nil {
			t.Errorf("redelivery %d: %v; want nil", i, err)
		}
	}
	// A different key still runs.
	if err := handler.Handle(t.Context(), jsonMessage("m-x", map[string]any{"deliveryId": "D-2"})); err != nil {
		t.Fatal(err)
	}
	if got := effects.get("D-1"); got != 1 {
		t.Errorf("effects[D-1] = %d; want 1", got)
	}
	if got := effects.get("D-2"); got != 1 {
		t.Errorf("effects[D-2] = %d; want 1", got)
	}
	if status := attribute(table.raw(t, "D-1"), "status"); status != "S:COMPLETED" {
		t.Errorf("idem[D-1].status = %s; want COMPLETED", status)
	}
}

// waitTimeout waits for wg, failing the test (not hanging it) after timeout.
func waitTimeout(t *testing.T, wg *sync.WaitGroup, timeout time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Errorf("timed out after %s waiting for the other deliveries", timeout)
	}
}

// awaitStart waits until the first attempt's handler has started, failing the test
// (not hanging it) when the attempt returns first or nothing happens for 10 s.
func awaitStart(t *testing.T, started <-chan struct{}, result <-chan error) {
	t.Helper()
	select {
	case <-started:
	case err := <-result:
		t.Fatalf("first attempt returned %v before its handler started", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt's handler did not start within 10 s")
	}
}

// TestLeaseExpiryTakeover: attempt 1 claims with a 10 s budget and is killed before
// committing; while its lease lasts a retry is deferred for exactly the lease left;
// after the lease ends, the next attempt takes the record over with the conditional
// write, runs and completes. When the killed attempt finally unwinds, its lease-
// conditioned delete cannot touch the new record.
func TestLeaseExpiryTakeover(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	clock := newFakeClock(start)
	var effects effects
	var calls atomic.Int64
	started, kill := make(chan struct{}), make(chan struct{})
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if calls.Add(1) == 1 {
			close(started)
			<-kill // hangs past its deadline until the platform kills it
			return errors.New("killed")
		}
		effects.add(field(t, m, "paymentId")) // the side effect commits at the end
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("paymentId"), Clock: clock, Random: noJitter,
		ClockSkewAllowance: -1, DuplicateWait: -1}))
	m1 := jsonMessage("m1", map[string]any{"paymentId": "P-77"})

	attempt1 := make(chan error, 1)
	go func() { attempt1 <- handler.Handle(withDeadline(t, start.Add(10*time.Second)), m1) }()
	awaitStart(t, started, attempt1)
	held := table.raw(t, "P-77")
	if got, want := attribute(held, "in_progress_expiry"), fmt.Sprintf("N:%d", start.Add(10*time.Second).UnixMilli()); got != want {
		t.Fatalf("attempt 1 in_progress_expiry = %s; want %s (start + 10 s budget); item: %s", got, want, held)
	}
	if got := attribute(held, "status"); got != "S:IN_PROGRESS" {
		t.Fatalf("attempt 1 status = %s; want IN_PROGRESS", got)
	}

	clock.Set(start.Add(4 * time.Second))
	err := handler.Handle(withDeadline(t, clock.Now().Add(10*time.Second)), m1)
	wantOutcome(t, "retry during the lease", err, outcomeDefer(6*time.Second))
	if got := table.raw(t, "P-77"); got != held {
		t.Errorf("deferred retry changed the record:\n got %s\nwant %s", got, held)
	}

	clock.Set(start.Add(60 * time.Second)) // the redelivery after VT=60s
	if err := handler.Handle(withDeadline(t, clock.Now().Add(10*time.Second)), m1); err != nil {
		t.Fatalf("attempt 2: %v; want the takeover to run and succeed", err)
	}
	done := table.raw(t, "P-77")
	if attribute(done, "status") != "S:COMPLETED" || attribute(done, "lease") == attribute(held, "lease") || attribute(done, "in_progress_expiry") != "" {
		t.Errorf("after takeover: %s; want COMPLETED under a new lease without in_progress_expiry", done)
	}
	if got, want := attribute(done, "expiration"), fmt.Sprintf("N:%d", start.Add(60*time.Second+time.Hour).Unix()); got != want {
		t.Errorf("expiration = %s; want %s (completion + 1 h TTL)", got, want)
	}

	close(kill)
	if err := testenv.Recv(t, attempt1, testenv.WaitTimeout, "attempt1"); err == nil || err.Error() != "killed" {
		t.Errorf("attempt 1 = %v; want the handler's own error", err)
	}
	if got := table.raw(t, "P-77"); got != done {
		t.Errorf("the killed attempt's release changed the taken-over record:\n got %s\nwant %s", got, done)
	}
	if got := effects.get("P-77"); got != 1 {
		t.Errorf("effects[P-77] = %d; want 1", got)
	}
}

// TestLeaseExpiryTakeoverRealTime is C06 on the wall clock: a lease (400 ms, or 20
// DynamoDB round trips measured first if longer) from a
// real context deadline, the first attempt abandoned (never returns until the end),
// retries polled until the takeover runs.
func TestLeaseExpiryTakeoverRealTime(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	var effects effects
	var calls atomic.Int64
	started, abandon := make(chan struct{}), make(chan struct{})
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if calls.Add(1) == 1 {
			close(started)
			<-abandon // ignores its context: a hung attempt whose process is gone
			return errors.New("abandoned")
		}
		effects.add(field(t, m, "paymentId"))
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField("paymentId"), MinRemaining: 100 * time.Millisecond, MaxDeferJitter: -1,
		ClockSkewAllowance: -1, DuplicateWait: -1,
	}))
	m1 := jsonMessage("m1", map[string]any{"paymentId": "P-78"})

	// The lease is attempt 1's deadline. It must outlast attempt 1's claim and at least one
	// retry's conditional write, which take a few DynamoDB round trips: a fixed 400 ms is
	// too short against the serialized emulator on a busy machine, so the lease is derived
	// from round trips measured now.
	lease := max(400*time.Millisecond, 20*table.roundTrip(t))
	ctx1, cancel1 := context.WithTimeout(t.Context(), lease)
	defer cancel1()
	attempt1 := make(chan error, 1)
	go func() { attempt1 <- handler.Handle(ctx1, m1) }()
	awaitStart(t, started, attempt1)

	outcomes := map[sqsworker.OutcomeKind]int{}
	testenv.Eventually(t, lease+10*time.Second, "a retry takes the expired lease over", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		outcome := sqsworker.Classify(handler.Handle(ctx, m1))
		outcomes[outcome.Kind]++
		switch outcome.Kind {
		case sqsworker.OutcomeDefer:
			if outcome.Delay > lease {
				t.Errorf("deferred %s; want at most the %s lease", outcome.Delay, lease)
			}
			return false
		case sqsworker.OutcomeDelete:
			return true
		}
		t.Fatalf("retry outcome %s (%v); want defer or delete", outcome.Kind, outcome.Err)
		return false
	})
	if outcomes[sqsworker.OutcomeDefer] == 0 {
		t.Errorf("no retry was deferred during the lease; outcomes %v", outcomes)
	}
	close(abandon)
	testenv.Recv(t, attempt1, testenv.WaitTimeout, "attempt1")
	if status := attribute(table.raw(t, "P-78"), "status"); status != "S:COMPLETED" {
		t.Errorf("status = %s; want COMPLETED", status)
	}
	if got := effects.get("P-78"); got != 1 {
		t.Errorf("effects[P-78] = %d; want 1", got)
	}
}

// TestNoClaimWithoutTime: with the deadline exactly now or 500 ms past, nothing is
// written and the attempt fails (retryable); no IN_PROGRESS item ever lacks
// in_progress_expiry; an immediate second attempt with a normal budget runs.
func TestNoClaimWithoutTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deadline time.Duration
	}{
		{"DeadlineExactlyNow", 0},
		{"Deadline500msPast", -500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := newEmulatorTable(t)
			clock := newFakeClock(start)
			var effects effects
			var during struct{ total, withoutExpiry, withExpiry int }
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
				during.total = table.scanCount(t, "", nil, nil)
				during.withoutExpiry = table.inProgressWithoutExpiry(t)
				during.withExpiry = table.scanCount(t, "#s = :ip AND #e = :e", map[string]string{"#s": "status", "#e": "in_progress_expiry"},
					map[string]types.AttributeValue{":ip": s("IN_PROGRESS"), ":e": n(fmt.Sprint(start.Add(30 * time.Second).UnixMilli()))})
				effects.add(m.ID)
				return nil
			}), idempotency.Middleware(table.store(), idempotency.Config{Clock: clock, InProgressTTL: time.Hour}))
			m := jsonMessage("m-c07", map[string]any{"job": 1})

			err := handler.Handle(withDeadline(t, start.Add(tc.deadline)), m)
			if !errors.Is(err, idempotency.ErrInsufficientTime) {
				t.Fatalf("first attempt = %v; want ErrInsufficientTime", err)
			}
			outcome := sqsworker.Classify(err)
			if outcome.Kind != sqsworker.OutcomeRetry || !outcome.Failed() {
				t.Errorf("first attempt outcome = %s (failed %t); want a failed retry", outcome.Kind, outcome.Failed())
			}
			if got := table.scanCount(t, "", nil, nil); got != 0 {
				t.Errorf("items after the refused attempt = %d; want 0", got)
			}
			if got := table.inProgressWithoutExpiry(t); got != 0 {
				t.Errorf("IN_PROGRESS items without in_progress_expiry = %d; want 0", got)
			}

			if err := handler.Handle(withDeadline(t, start.Add(30*time.Second)), m); err != nil {
				t.Fatalf("second attempt: %v", err)
			}
			if during.total != 1 || during.withoutExpiry != 0 || during.withExpiry != 1 {
				t.Errorf("during the second attempt: %+v; want 1 item, IN_PROGRESS with in_progress_expiry = deadline", during)
			}
			if got := table.inProgressWithoutExpiry(t); got != 0 {
				t.Errorf("IN_PROGRESS items without in_progress_expiry at the end = %d; want 0", got)
			}
			if got := effects.get("m-c07"); got != 1 {
				t.Errorf("effects = %d; want 1", got)
			}
		})
	}
}

// TestRejectedDuplicatesNeverTouchTheRecord: d2 and d3 arrive while d1 runs and are
// deferred, leaving the item byte-for-byte unchanged and sending no update or delete;
// after d1 completes their retries get the stored result without running; d4 with a
// different amount is a payload mismatch and the completed record keeps its hash.
func TestRejectedDuplicatesNeverTouchTheRecord(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	clock := newFakeClock(start)
	var effects effects
	var calls atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var replayed []string
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if calls.Add(1) == 1 {
			close(started)
			<-finish // the 8 s job
		}
		effects.add(field(t, m, "key"))
		idempotency.SetResult(ctx, []byte("receipt-"+m.ID))
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField("key"), Clock: clock, Random: noJitter, ClockSkewAllowance: -1, DuplicateWait: -1,
		InProgressTTL: time.Hour, // no renewal (an UpdateItem) while the duplicates are counted
		OnCompletedDuplicate: func(_ context.Context, m *sqsworker.Message, r idempotency.Record) error {
			mu.Lock()
			defer mu.Unlock()
			replayed = append(replayed, m.ID+"="+string(r.Result))
			return nil
		},
	}))
	body := map[string]any{"key": "K", "amount": 100}
	deadline := start.Add(30 * time.Second)

	d1 := make(chan error, 1)
	go func() { d1 <- handler.Handle(withDeadline(t, deadline), jsonMessage("d1", body)) }()
	awaitStart(t, started, d1)
	held := table.raw(t, "K")
	writesBefore := table.api.updates.Load() + table.api.deletes.Load()
	for i, id := range []string{"d2", "d3"} {
		clock.Set(start.Add(time.Duration(i+1) * time.Second))
		err := handler.Handle(withDeadline(t, clock.Now().Add(30*time.Second)), jsonMessage(id, body))
		wantOutcome(t, id, err, outcomeDefer(deadline.Sub(clock.Now())))
		if !errors.Is(err, idempotency.ErrAlreadyInProgress) {
			t.Errorf("%s = %v; want ErrAlreadyInProgress", id, err)
		}
		if got := table.raw(t, "K"); got != held {
			t.Errorf("after %s's rejection the item changed:\n got %s\nwant %s", id, got, held)
		}
	}
	if got := table.api.updates.Load() + table.api.deletes.Load(); got != writesBefore {
		t.Errorf("rejected duplicates sent %d updates/deletes; want 0", got-writesBefore)
	}

	clock.Set(start.Add(8 * time.Second))
	close(finish)
	if err := testenv.Recv(t, d1, testenv.WaitTimeout, "d1"); err != nil {
		t.Fatalf("d1: %v", err)
	}
	done := table.raw(t, "K")
	if attribute(done, "status") != "S:COMPLETED" || attribute(done, "lease") != attribute(held, "lease") || attribute(done, "validation") != attribute(held, "validation") {
		t.Fatalf("after d1: %s; want COMPLETED with d1's lease and validation", done)
	}

	clock.Set(start.Add(9 * time.Second))
	for _, id := range []string{"d2", "d3"} {
		wantOutcome(t, id+" retry", handler.Handle(withDeadline(t, clock.Now().Add(30*time.Second)), jsonMessage(id, body)), outcomeDelete)
	}
	if strings.Join(replayed, ",") != "d2=receipt-d1,d3=receipt-d1" {
		t.Errorf("stored results returned = %v; want d1's receipt for d2 and d3", replayed)
	}

	writesBefore = table.api.updates.Load() + table.api.deletes.Load()
	err := handler.Handle(withDeadline(t, clock.Now().Add(30*time.Second)), jsonMessage("d4", map[string]any{"key": "K", "amount": 250}))
	wantOutcome(t, "d4", err, outcomeMismatch)
	if !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("d4 = %v; want ErrPayloadMismatch", err)
	}
	if got := table.raw(t, "K"); got != done {
		t.Errorf("d4's rejection changed the item:\n got %s\nwant %s", got, done)
	}
	if got := table.api.updates.Load() + table.api.deletes.Load(); got != writesBefore {
		t.Errorf("d4 sent %d updates/deletes; want 0", got-writesBefore)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler calls = %d; want 1", got)
	}
	if got := effects.get("K"); got != 1 {
		t.Errorf("effects[K] = %d; want 1", got)
	}
}

// TestPayloadValidatedOnEveryPath: m2 reuses m1's key with another amount while m1 is
// COMPLETED or still IN_PROGRESS, with the ALL_OLD fast path on and off. In all four
// combinations m2's handler is not called and the outcome is a dead-letter with reason
// IdempotencyPayloadMismatch; the stored amount stays 100.
func TestPayloadValidatedOnEveryPath(t *testing.T) {
	t.Parallel()
	for _, state := range []string{"Completed", "InProgress"} {
		for _, fastPath := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/FastPath=%t", state, fastPath), func(t *testing.T) {
				t.Parallel()
				table := newEmulatorTable(t)
				clock := newFakeClock(start)
				var effects effects
				var amount atomic.Value
				var calls atomic.Int64
				started, finish := make(chan struct{}), make(chan struct{})
				handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
					calls.Add(1)
					if state == "InProgress" {
						close(started)
						<-finish
					}
					effects.add(field(t, m, "orderId"))
					amount.Store(field(t, m, "amount"))
					idempotency.SetResult(ctx, []byte(m.Body))
					return nil
				}), idempotency.Middleware(table.store(idempotency.WithFastPath(fastPath)), idempotency.Config{
					KeyFunc:     idempotency.KeyFromJSONField("orderId"),
					PayloadHash: idempotency.HashJSONFields("amount"),
					Clock:       clock,
				}))
				ctx := withDeadline(t, start.Add(30*time.Second))
				m1 := make(chan error, 1)
				go func() { m1 <- handler.Handle(ctx, jsonMessage("m1", map[string]any{"orderId": "O-9", "amount": 100})) }()
				if state == "InProgress" {
					awaitStart(t, started, m1)
				} else if err := testenv.Recv(t, m1, testenv.WaitTimeout, "m1"); err != nil {
					t.Fatalf("m1: %v", err)
				}
				before := table.raw(t, "O-9")
				getsBefore := table.api.gets.Load()

				clock.Set(start.Add(2 * time.Second))
				err := handler.Handle(ctx, jsonMessage("m2", map[string]any{"orderId": "O-9", "amount": 250}))
				wantOutcome(t, "m2", err, outcomeMismatch)
				if got := calls.Load(); got != 1 {
					t.Errorf("handler calls = %d; want 1 (m1 only)", got)
				}
				if got := table.raw(t, "O-9"); got != before {
					t.Errorf("m2 changed the item:\n got %s\nwant %s", got, before)
				}
				wantReads := map[bool]int64{true: 0, false: 1}[fastPath]
				if got := table.api.gets.Load() - getsBefore; got != wantReads {
					t.Errorf("m2 read the record %d times; want %d with fast path %t", got, wantReads, fastPath)
				}

				if state == "InProgress" {
					close(finish)
					if err := testenv.Recv(t, m1, testenv.WaitTimeout, "m1"); err != nil {
						t.Fatalf("m1: %v", err)
					}
				}
				final := table.raw(t, "O-9")
				if attribute(final, "status") != "S:COMPLETED" || attribute(final, "validation") != attribute(before, "validation") {
					t.Errorf("final item %s; want COMPLETED with m1's validation hash", final)
				}
				var result struct{ Amount int }
				record, err := table.store().Get(t.Context(), stored("O-9"))
				if err != nil || json.Unmarshal(record.Result, &result) != nil || result.Amount != 100 {
					t.Errorf("stored result %q (%v); want amount 100", record.Result, err)
				}
				if got := effects.get("O-9"); got != 1 || amount.Load() != "100" {
					t.Errorf("effects[O-9] = %d, amount %v; want 1, 100", got, amount.Load())
				}
			})
		}
	}
}
