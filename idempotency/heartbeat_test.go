package idempotency_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestDuplicateSettlesSoonAfterTheOriginalCompletes (moto, real time): a duplicate
// arrives while its original runs. It used to be deferred for the original's whole
// lease (5 minutes by default), one receive each time. Now it waits in process and
// settles as a completed duplicate once the original completes: one receive, handler
// calls 1. Logs the time from the original's completion to the duplicate's settlement.
func TestDuplicateSettlesSoonAfterTheOriginalCompletes(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	var calls atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		calls.Add(1)
		close(started)
		<-finish
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id")}))
	message := jsonMessage("m1", map[string]any{"id": "K"})

	original := make(chan time.Time, 1)
	go func() {
		if err := handler.Handle(t.Context(), message); err != nil {
			t.Errorf("original: %v", err)
		}
		original <- time.Now()
	}()
	testenv.Recv(t, started, testenv.WaitTimeout, "started")
	gets := table.api.gets.Load()
	duplicate := make(chan error, 1)
	var settled atomic.Int64
	go func() {
		err := handler.Handle(t.Context(), jsonMessage("m2", map[string]any{"id": "K"}))
		settled.Store(time.Now().UnixNano())
		duplicate <- err
	}()
	// The duplicate is waiting once it has read the record (its claim failed first).
	testenv.Eventually(t, 5*time.Second, "the duplicate reads the record while the original runs", func() bool {
		return table.api.gets.Load() > gets
	})
	close(finish)
	completedAt := testenv.Recv(t, original, testenv.WaitTimeout, "original")
	err := testenv.Recv(t, duplicate, testenv.WaitTimeout, "duplicate")
	wantOutcome(t, "duplicate", err, outcomeDelete)
	if got := calls.Load(); got != 1 {
		t.Errorf("handler calls = %d; want 1", got)
	}
	t.Logf("original completed -> duplicate settled: %s (one receive; DuplicateWait %s)",
		time.Unix(0, settled.Load()).Sub(completedAt).Round(time.Millisecond), idempotency.DefaultDuplicateWait)
}

// TestHeartbeatRenewsTheLease (moto, real time): while a handler runs longer than its
// lease (InProgressTTL 3 s), the heartbeat keeps extending in_progress_expiry, so a
// duplicate never takes the key over; it is deferred until the original's deadline (it
// saw the lease renewed), one receive.
func TestHeartbeatRenewsTheLease(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	// A 3 s lease renewed every second: two seconds to spare for a busy emulator.
	config := idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id"), InProgressTTL: 3 * time.Second,
		ClockSkewAllowance: -1, MaxDeferJitter: -1, DuplicateWait: -1} // decide at once: the renewal check is the point
	var calls atomic.Int64
	started, finish := make(chan struct{}), make(chan struct{})
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if calls.Add(1) == 1 {
			close(started)
			<-finish
		}
		return nil
	}), idempotency.Middleware(table.store(), config))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	original := make(chan error, 1)
	go func() { original <- handler.Handle(ctx, jsonMessage("m1", map[string]any{"id": "K"})) }()
	testenv.Recv(t, started, testenv.WaitTimeout, "started")

	first := attribute(table.raw(t, "K"), "in_progress_expiry")
	renewals := 0
	last := first
	testenv.Eventually(t, 30*time.Second, "the lease is renewed twice", func() bool {
		if current := attribute(table.raw(t, "K"), "in_progress_expiry"); current != last {
			renewals++
			last = current
		}
		return renewals >= 2
	})
	before := time.Until(deadline)
	err := handler.Handle(t.Context(), jsonMessage("m2", map[string]any{"id": "K"}))
	after := time.Until(deadline)
	outcome := sqsworker.Classify(err)
	// The stored deadline has millisecond precision (truncated).
	if outcome.Kind != sqsworker.OutcomeDefer || outcome.Delay < after-time.Millisecond || outcome.Delay > before {
		t.Errorf("duplicate = %s %s (%v); want deferred until the original's deadline (between %s and %s)", outcome.Kind, outcome.Delay, err, after, before)
	}
	close(finish)
	if err := testenv.Recv(t, original, testenv.WaitTimeout, "original"); err != nil {
		t.Fatalf("original: %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("handler calls = %d; want 1", calls.Load())
	}
	if status := attribute(table.raw(t, "K"), "status"); status != "S:COMPLETED" {
		t.Errorf("status = %s; want COMPLETED", status)
	}
}

// crashingStore forwards to a Store until crash() is called; from then on the process
// "is gone": renewals, completions and deletes fail without reaching the store.
type crashingStore struct {
	idempotency.Store
	crashed atomic.Bool
}

var errCrashed = errors.New("process crashed")

func (s *crashingStore) Renew(ctx context.Context, r idempotency.Record) error {
	if s.crashed.Load() {
		return errCrashed
	}
	return s.Store.Renew(ctx, r)
}

func (s *crashingStore) Complete(ctx context.Context, r idempotency.Record) error {
	if s.crashed.Load() {
		return errCrashed
	}
	return s.Store.Complete(ctx, r)
}

func (s *crashingStore) Delete(ctx context.Context, key, lease string) error {
	if s.crashed.Load() {
		return errCrashed
	}
	return s.Store.Delete(ctx, key, lease)
}

// TestCrashedOriginalIsTakenOverSoon (moto, real time): the original's process crashes
// mid-run (its heartbeat stops; its record stays IN_PROGRESS). Its redelivery, arriving
// at once, used to be deferred for the whole lease (5 minutes). Now it waits in process,
// sees no renewal, and takes the key over once the short lease (InProgressTTL 900 ms)
// plus the skew allowance (300 ms) has passed: one receive, effects 1. Logs the time
// from the crash to the takeover.
func TestCrashedOriginalIsTakenOverSoon(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	config := idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id"), InProgressTTL: 900 * time.Millisecond,
		ClockSkewAllowance: 300 * time.Millisecond, DuplicateWait: 10 * time.Second}
	crashing := &crashingStore{Store: table.store()}
	started, hang := make(chan struct{}), make(chan struct{})
	defer close(hang)
	crashed := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		close(started)
		<-hang
		return nil
	}), idempotency.Middleware(crashing, config))
	var tookOver atomic.Int64
	var effects atomic.Int64
	redelivery := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		tookOver.Store(time.Now().UnixNano())
		effects.Add(1)
		return nil
	}), idempotency.Middleware(table.store(), config))

	go func() { _ = crashed.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"})) }()
	testenv.Recv(t, started, testenv.WaitTimeout, "started")
	crashing.crashed.Store(true)
	crashAt := time.Now()
	err := redelivery.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"}))
	wantOutcome(t, "redelivery", err, outcomeDelete)
	if effects.Load() != 1 {
		t.Fatalf("effects = %d; want 1", effects.Load())
	}
	elapsed := time.Unix(0, tookOver.Load()).Sub(crashAt)
	if limit := config.InProgressTTL + config.ClockSkewAllowance; elapsed > config.DuplicateWait {
		t.Errorf("takeover %s after the crash; want within the wait (lease + allowance = %s)", elapsed, limit)
	}
	t.Logf("crash -> takeover: %s (InProgressTTL %s + ClockSkewAllowance %s; one receive)",
		elapsed.Round(time.Millisecond), config.InProgressTTL, config.ClockSkewAllowance)
}

// TestLostLeaseCancelsTheHandler: when a renewal finds the lease gone (taken over after
// missed renewals, or deleted by an operator), the heartbeat cancels the handler's
// context with a cause matching ErrLeaseLost.
func TestLostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	started := make(chan struct{})
	var cause error
	var events eventLog
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return cause
	}), idempotency.Middleware(store, idempotency.Config{InProgressTTL: 60 * time.Millisecond, Observer: &events}))
	done := make(chan error, 1)
	go func() { done <- handler.Handle(t.Context(), &sqsworker.Message{ID: "m-1", Body: "{}"}) }()
	testenv.Recv(t, started, testenv.WaitTimeout, "started")
	record, err := store.Get(t.Context(), stored("m-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(t.Context(), stored("m-1"), record.Lease); err != nil { // an operator releases the key
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled after the lease was lost")
	}
	if !errors.Is(cause, idempotency.ErrLeaseLost) {
		t.Errorf("context cause = %v; want ErrLeaseLost", cause)
	}
	if got, want := events.take(), []idempotency.EventKind{idempotency.EventClaimed, idempotency.EventLeaseLost}; !slices.Equal(got, want) {
		t.Errorf("observed %v; want %v", got, want)
	}
}

// TestSilentOriginalDefersOnlyToItsLeaseEnd (moto, real time): when the wait is shorter
// than the lease, a redelivery of a crashed original sees no renewal during its wait
// (at least InProgressTTL/2) and is deferred only until the lease can be taken
// over, not until the crashed run's deadline (1 min here); a later receive takes over.
func TestSilentOriginalDefersOnlyToItsLeaseEnd(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	// The wait (3.5 s) outlasts InProgressTTL/2 (3 s, the silence threshold) but not the
	// lease (6 s), with seconds to spare for a busy emulator's round trips.
	config := idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id"), InProgressTTL: 6 * time.Second,
		ClockSkewAllowance: 300 * time.Millisecond, DuplicateWait: 3500 * time.Millisecond, MaxDeferJitter: -1}
	crashing := &crashingStore{Store: table.store()}
	started, hang := make(chan struct{}), make(chan struct{})
	defer close(hang)
	crashed := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		close(started)
		<-hang
		return nil
	}), idempotency.Middleware(crashing, config))
	var effects atomic.Int64
	redelivery := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		effects.Add(1)
		return nil
	}), idempotency.Middleware(table.store(), config))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() { _ = crashed.Handle(ctx, jsonMessage("m1", map[string]any{"id": "K"})) }()
	testenv.Recv(t, started, testenv.WaitTimeout, "started")
	crashing.crashed.Store(true)
	crashAt := time.Now()
	err := redelivery.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"}))
	outcome := sqsworker.Classify(err)
	limit := config.InProgressTTL + config.ClockSkewAllowance
	if outcome.Kind != sqsworker.OutcomeDefer || outcome.Delay > limit {
		t.Fatalf("first redelivery = %s %s (%v); want deferred for at most lease + allowance (%s)", outcome.Kind, outcome.Delay, err, limit)
	}
	// The message comes back after its deferral: the lease has ended, the key is taken over.
	testenv.Eventually(t, 30*time.Second, "a later receive takes the key over", func() bool {
		return sqsworker.Classify(redelivery.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"}))).Kind == sqsworker.OutcomeDelete
	})
	if effects.Load() != 1 {
		t.Errorf("effects = %d; want 1", effects.Load())
	}
	t.Logf("crash -> takeover on a later receive: %s (first receive deferred %s)", time.Since(crashAt).Round(time.Millisecond), outcome.Delay.Round(time.Millisecond))
}
