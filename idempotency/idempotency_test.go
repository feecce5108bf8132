package idempotency_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/idempotency/idempotencytest"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// flow is a middleware on a MemoryStore with a fake clock and a counting handler.
type flow struct {
	store   *idempotency.MemoryStore
	clock   *fakeClock
	calls   atomic.Int64
	events  eventLog
	handler sqsworker.Handler
	result  func(ctx context.Context, message *sqsworker.Message) error
}

func newFlow(t *testing.T, config idempotency.Config) *flow {
	t.Helper()
	f := &flow{store: idempotency.NewMemoryStore(), clock: newFakeClock(start)}
	if config.Clock == nil {
		config.Clock = f.clock
	}
	if config.Random == nil {
		config.Random = noJitter
	}
	if config.Observer == nil {
		config.Observer = &f.events
	}
	// These tests check the lease rules without the skew allowance and the in-process
	// wait (heartbeat_test.go covers those).
	if config.ClockSkewAllowance == 0 {
		config.ClockSkewAllowance = -1
	}
	if config.DuplicateWait == 0 {
		config.DuplicateWait = -1
	}
	inner := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		f.calls.Add(1)
		if f.result != nil {
			return f.result(ctx, message)
		}
		idempotency.SetResult(ctx, []byte("result:"+message.ID))
		return nil
	})
	f.handler = sqsworker.Chain(inner, idempotency.Middleware(f.store, config))
	return f
}

func message(id, body string) *sqsworker.Message {
	return &sqsworker.Message{ID: id, Body: body, ReceiveCount: 1, QueueURL: "https://sqs.test/q"}
}

// claimElsewhere writes an in-progress record as another worker would.
func (f *flow) claimElsewhere(t *testing.T, key, body string, leaseEnd time.Time) idempotency.Record {
	t.Helper()
	hash, _ := idempotency.HashBody(message("", body))
	record := idempotency.Record{
		Key: stored(key), Status: idempotency.StatusInProgress, ExpiresAt: start.Add(time.Hour),
		InProgressExpiresAt: leaseEnd, Lease: "ELSEWHERE", PayloadHash: hash,
	}
	if err := f.store.PutInProgress(t.Context(), record, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return record
}

func TestMiddlewareOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		config    idempotency.Config
		setup     func(t *testing.T, f *flow)
		ctx       func(t *testing.T) context.Context
		message   *sqsworker.Message
		want      sqsworker.Outcome
		wantIs    error
		wantCalls int64
		// wantEvents are the decisions observed while handling message (nil: none).
		wantEvents []idempotency.EventKind
		// wantRecord is the record expected afterwards (nil: none).
		wantRecord *idempotency.Record
	}{
		{
			name:       "NewKeyRunsAndCompletes",
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
			wantRecord: &idempotency.Record{
				Key: stored("m-1"), Status: idempotency.StatusCompleted, ExpiresAt: start.Add(time.Hour),
				PayloadHash: hashOf(`{"a":1}`), Result: []byte("result:m-1"),
			},
		},
		{
			name: "CompletedDuplicateSkipsHandler",
			setup: func(t *testing.T, f *flow) {
				if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", `{"a":1}`)); err != nil {
					t.Fatal(err)
				}
				f.calls.Store(0)
				f.clock.Set(start.Add(59 * time.Minute))
			},
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDelete,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventCompletedDuplicate},
		},
		{
			name: "CompletedRecordExpiredRunsAgain",
			setup: func(t *testing.T, f *flow) {
				if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", `{"a":1}`)); err != nil {
					t.Fatal(err)
				}
				f.calls.Store(0)
				f.clock.Set(start.Add(time.Hour + time.Second))
			},
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
		},
		{
			name:       "InProgressDefersForLeaseLeftPlusJitter",
			config:     idempotency.Config{Random: func() float64 { return 0.5 }},
			setup:      func(t *testing.T, f *flow) { f.claimElsewhere(t, "m-1", `{"a":1}`, start.Add(7*time.Second)) },
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDefer(7*time.Second + time.Second), // 0.5 × 2 s jitter
			wantIs:     idempotency.ErrAlreadyInProgress,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventDeferred},
		},
		{
			name:       "InProgressNoJitter",
			config:     idempotency.Config{MaxDeferJitter: -1, Random: func() float64 { return 0.9 }},
			setup:      func(t *testing.T, f *flow) { f.claimElsewhere(t, "m-1", `{"a":1}`, start.Add(1500*time.Millisecond)) },
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDefer(1500 * time.Millisecond),
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventDeferred},
		},
		{
			name:       "ExpiredLeaseTakenOver",
			setup:      func(t *testing.T, f *flow) { f.claimElsewhere(t, "m-1", `{"a":1}`, start.Add(-time.Millisecond)) },
			message:    message("m-1", `{"a":1}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
		},
		{
			name:       "MismatchAgainstInProgress",
			setup:      func(t *testing.T, f *flow) { f.claimElsewhere(t, "m-1", `{"a":1}`, start.Add(time.Minute)) },
			message:    message("m-1", `{"a":2}`),
			want:       outcomeMismatch,
			wantIs:     idempotency.ErrPayloadMismatch,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventPayloadMismatch},
		},
		{
			name:       "KeyMissingIsPermanent",
			config:     idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id")},
			message:    message("m-1", `{"other":1}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: "IdempotencyKeyMissing"},
			wantIs:     idempotency.ErrKeyMissing,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventKeyMissing},
		},
		{
			name:       "EmptyKeyIsMissing",
			config:     idempotency.Config{KeyFunc: func(*sqsworker.Message) (string, error) { return "", nil }},
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: "IdempotencyKeyMissing"},
			wantIs:     idempotency.ErrKeyMissing,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventKeyMissing},
		},
		{
			name:       "KeyOptionalRunsWithoutRecord",
			config:     idempotency.Config{KeyFunc: idempotency.KeyFromJSONField("id"), KeyOptional: true},
			message:    message("m-1", `{"other":1}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventBypassed},
		},
		{
			name:       "KeyFuncErrorPassedThrough",
			config:     idempotency.Config{KeyFunc: func(*sqsworker.Message) (string, error) { return "", sqsworker.RetryAfter(time.Minute, nil) }},
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeRetryAfter, Delay: time.Minute, Reason: "RetryAfter"},
			wantCalls:  0,
			wantEvents: nil,
		},
		{
			name:       "PayloadHashErrorIsPermanent",
			config:     idempotency.Config{PayloadHash: idempotency.HashJSONFields("amount")},
			message:    message("m-1", `not json`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: "IdempotencyPayloadInvalid"},
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventPayloadInvalid},
		},
		{
			name:       "DeadlineExactlyNow",
			ctx:        func(t *testing.T) context.Context { return withDeadline(t, start) },
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeRetry, Reason: "HandlerError"},
			wantIs:     idempotency.ErrInsufficientTime,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventInsufficientTime},
		},
		{
			name:       "DeadlinePassed",
			ctx:        func(t *testing.T) context.Context { return withDeadline(t, start.Add(-500*time.Millisecond)) },
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeRetry, Reason: "HandlerError"},
			wantIs:     idempotency.ErrInsufficientTime,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventInsufficientTime},
		},
		{
			name:       "JustBelowMinRemaining",
			ctx:        func(t *testing.T) context.Context { return withDeadline(t, start.Add(999*time.Millisecond)) },
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeRetry, Reason: "HandlerError"},
			wantIs:     idempotency.ErrInsufficientTime,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventInsufficientTime},
		},
		{
			name:       "ExactlyMinRemainingRuns",
			ctx:        func(t *testing.T) context.Context { return withDeadline(t, start.Add(time.Second)) },
			message:    message("m-1", `{}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
		},
		{
			name: "CancelledContextClaimsNothing",
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			message:    message("m-1", `{}`),
			want:       sqsworker.Outcome{Kind: sqsworker.OutcomeRetry, Reason: "HandlerError"},
			wantIs:     context.Canceled,
			wantCalls:  0,
			wantEvents: nil,
		},
		{
			name:       "KeyPrefix",
			config:     idempotency.Config{KeyPrefix: "webhook", KeyFunc: idempotency.KeyFromJSONField("id")},
			message:    message("m-1", `{"id":"D-1"}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
			wantRecord: &idempotency.Record{
				Key: "idempotency#webhook#D-1", Status: idempotency.StatusCompleted, ExpiresAt: start.Add(time.Hour),
				PayloadHash: hashOf(`{"id":"D-1"}`), Result: []byte("result:m-1"),
			},
		},
		{
			name:       "CustomTTL",
			config:     idempotency.Config{TTL: 10 * time.Minute, PayloadHash: func(*sqsworker.Message) (string, error) { return "", nil }},
			message:    message("m-1", `{}`),
			want:       outcomeDelete,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
			wantRecord: &idempotency.Record{
				Key: stored("m-1"), Status: idempotency.StatusCompleted, ExpiresAt: start.Add(10 * time.Minute), Result: []byte("result:m-1"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFlow(t, tc.config)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			f.events.take()
			ctx := withDeadline(t, f.clock.Now().Add(30*time.Second))
			if tc.ctx != nil {
				ctx = tc.ctx(t)
			}
			err := f.handler.Handle(ctx, tc.message)
			wantOutcome(t, "Handle", err, tc.want)
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Handle = %v; want an error matching %v", err, tc.wantIs)
			}
			if err != nil && !strings.Contains(err.Error(), "idempotency: ") && tc.wantIs != nil && tc.wantIs != context.Canceled {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if got := f.calls.Load(); got != tc.wantCalls {
				t.Errorf("handler calls = %d; want %d", got, tc.wantCalls)
			}
			if got := f.events.take(); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("observed %v; want %v", got, tc.wantEvents)
			}
			if tc.wantRecord != nil {
				got, err := f.store.Get(t.Context(), tc.wantRecord.Key)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				tc.wantRecord.Lease = got.Lease // random
				if diff := idempotencytest.RecordDiff(*tc.wantRecord, got); diff != "" {
					t.Errorf("record mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func hashOf(body string) string {
	hash, _ := idempotency.HashBody(message("", body))
	return hash
}

// TestLeaseEnd checks the in-progress record's lease: InProgressTTL (10 s by default),
// but never past the context deadline; the expiration always outlives the lease.
func TestLeaseEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		config         idempotency.Config
		ctx            func(t *testing.T) context.Context
		wantLeaseEnd   time.Time
		wantExpiration time.Time
	}{
		{"DeadlineBeforeTTL", idempotency.Config{}, func(t *testing.T) context.Context { return withDeadline(t, start.Add(2345*time.Millisecond)) },
			start.Add(2345 * time.Millisecond), start.Add(time.Hour)},
		{"DeadlineAfterTTL", idempotency.Config{}, func(t *testing.T) context.Context { return withDeadline(t, start.Add(12345*time.Millisecond)) },
			start.Add(10 * time.Second), start.Add(time.Hour)},
		{"NoDeadlineDefault", idempotency.Config{}, func(t *testing.T) context.Context { return t.Context() },
			start.Add(10 * time.Second), start.Add(time.Hour)},
		{"NoDeadlineConfigured", idempotency.Config{InProgressTTL: 90 * time.Second}, func(t *testing.T) context.Context { return t.Context() },
			start.Add(90 * time.Second), start.Add(time.Hour)},
		{"LeaseBeyondTTL", idempotency.Config{InProgressTTL: 2*time.Hour + 300*time.Millisecond}, func(t *testing.T) context.Context {
			return withDeadline(t, start.Add(3*time.Hour))
		},
			start.Add(2*time.Hour + 300*time.Millisecond), start.Add(2*time.Hour + time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFlow(t, tc.config)
			var seen idempotency.Record
			f.result = func(ctx context.Context, m *sqsworker.Message) error {
				var err error
				seen, err = f.store.Get(ctx, stored(m.ID))
				return err
			}
			if err := f.handler.Handle(tc.ctx(t), message("m-1", "{}")); err != nil {
				t.Fatal(err)
			}
			if seen.Status != idempotency.StatusInProgress || !seen.InProgressExpiresAt.Equal(tc.wantLeaseEnd) || !seen.ExpiresAt.Equal(tc.wantExpiration) {
				t.Errorf("record during the handler = %s lease end %s expiration %s; want IN_PROGRESS, %s, %s",
					seen.Status, seen.InProgressExpiresAt, seen.ExpiresAt, tc.wantLeaseEnd, tc.wantExpiration)
			}
		})
	}
}

// TestHandlerErrorReleasesRecord: the record is deleted (lease-conditioned) and the
// handler's own error is returned; the next attempt runs at once.
func TestHandlerErrorReleasesRecord(t *testing.T) {
	t.Parallel()
	f := newFlow(t, idempotency.Config{})
	handlerErr := errors.New("downstream 503")
	f.result = func(context.Context, *sqsworker.Message) error { return handlerErr }
	err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}"))
	if err != handlerErr {
		t.Fatalf("Handle = %v; want the handler's error itself", err)
	}
	if _, err := f.store.Get(t.Context(), stored("m-1")); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("record after handler error: %v; want none", err)
	}
	f.result = nil
	if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}")); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := f.calls.Load(); got != 2 {
		t.Errorf("handler calls = %d; want 2", got)
	}
}

// TestCancelledHandlerStillReleases: a handler stopped by its context (the host's hard
// timeout or drain deadline) still frees its key, with a context of its own.
func TestCancelledHandlerStillReleases(t *testing.T) {
	t.Parallel()
	f := newFlow(t, idempotency.Config{})
	ctx, cancel := context.WithCancel(withDeadline(t, start.Add(time.Minute)))
	f.result = func(ctx context.Context, _ *sqsworker.Message) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	if err := f.handler.Handle(ctx, message("m-1", "{}")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Handle = %v; want context.Canceled", err)
	}
	if _, err := f.store.Get(t.Context(), stored("m-1")); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("record after cancellation: %v; want none (MemoryStore refuses cancelled contexts)", err)
	}
}

// TestHandlerPanicReleasesRecord: a panic frees the key and still reaches the host's
// recovery with the panic's own location.
func TestHandlerPanicReleasesRecord(t *testing.T) {
	t.Parallel()
	f := newFlow(t, idempotency.Config{})
	f.result = func(context.Context, *sqsworker.Message) error { panic("bad input") }
	err := settle.Call(withDeadline(t, start.Add(time.Minute)), f.handler, message("m-1", "{}"))
	panicErr, ok := errors.AsType[*sqsworker.PanicError](err)
	if !ok {
		t.Fatalf("CallHandler = %v; want *PanicError", err)
	}
	if !strings.Contains(panicErr.Location, "idempotency_test.go") {
		t.Errorf("panic location = %q; want the handler's line in idempotency_test.go", panicErr.Location)
	}
	if _, err := f.store.Get(t.Context(), stored("m-1")); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("record after panic: %v; want none", err)
	}
}

// faultyStore wraps a Store and fails chosen operations.
type faultyStore struct {
	idempotency.Store
	completeErr, deleteErr error
	putErr                 func() error
	getErr                 error
	puts, gets             atomic.Int64
}

func (s *faultyStore) PutInProgress(ctx context.Context, r idempotency.Record, now time.Time) error {
	s.puts.Add(1)
	if s.putErr != nil {
		return s.putErr()
	}
	return s.Store.PutInProgress(ctx, r, now)
}

func (s *faultyStore) Get(ctx context.Context, key string) (idempotency.Record, error) {
	s.gets.Add(1)
	if s.getErr != nil {
		return idempotency.Record{}, s.getErr
	}
	return s.Store.Get(ctx, key)
}

func (s *faultyStore) Complete(ctx context.Context, r idempotency.Record) error {
	if s.completeErr != nil {
		return s.completeErr
	}
	return s.Store.Complete(ctx, r)
}

func (s *faultyStore) Delete(ctx context.Context, key, lease string) error {
	if s.deleteErr != nil {
		return s.deleteErr
	}
	return s.Store.Delete(ctx, key, lease)
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	backend := &idempotency.StoreError{Op: "x", Key: "m-1", Err: errors.New("throttled")}
	handlerErr := errors.New("handler failed")
	tests := []struct {
		name       string
		store      *faultyStore
		handlerErr error
		wantErr    func(error) bool
		wantLog    string
		wantPuts   int64
		wantGets   int64
		wantCalls  int64
		wantEvents []idempotency.EventKind
	}{
		{
			name:       "DeleteFailureLoggedHandlerErrorReturned",
			store:      &faultyStore{deleteErr: backend},
			handlerErr: handlerErr,
			wantErr:    func(err error) bool { return err == handlerErr },
			wantLog:    "releasing the record after a handler failure failed",
			wantPuts:   1, wantCalls: 1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed},
		},
		{
			name:       "CompleteFailureLoggedNilReturned",
			store:      &faultyStore{completeErr: backend},
			wantErr:    func(err error) bool { return err == nil },
			wantLog:    "completing the record failed",
			wantPuts:   1,
			wantCalls:  1,
			wantEvents: []idempotency.EventKind{idempotency.EventClaimed, idempotency.EventCompleteFailed},
		},
		{
			name:  "ClaimBackendFailureReturned",
			store: &faultyStore{putErr: func() error { return backend }},
			wantErr: func(err error) bool {
				return errors.Is(err, backend) && sqsworker.Classify(err).Kind == sqsworker.OutcomeRetry
			},
			wantLog:    "claim failed",
			wantPuts:   1,
			wantCalls:  0,
			wantEvents: []idempotency.EventKind{idempotency.EventStoreError},
		},
		{
			name: "ConflictReadFailureReturned",
			store: &faultyStore{
				putErr: func() error { return &idempotency.AlreadyExistsError{Key: "m-1"} },
				getErr: backend,
			},
			wantErr:  func(err error) bool { return errors.Is(err, backend) },
			wantLog:  "reading the conflicting record failed",
			wantPuts: 1, wantGets: 1,
			wantEvents: []idempotency.EventKind{idempotency.EventStoreError},
		},
		{
			name: "VanishingRecordIsInconsistentAfterThreeClaims",
			store: &faultyStore{
				putErr: func() error { return &idempotency.AlreadyExistsError{Key: "m-1"} },
			},
			wantErr: func(err error) bool {
				return errors.Is(err, idempotency.ErrInconsistentState) && sqsworker.Classify(err).Kind == sqsworker.OutcomeRetry
			},
			wantLog:  "claim failed",
			wantPuts: 3, wantGets: 3,
			wantEvents: []idempotency.EventKind{idempotency.EventStoreError},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.store.Store = idempotency.NewMemoryStore()
			var logs logBuffer
			var calls atomic.Int64
			var events eventLog
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				calls.Add(1)
				return tc.handlerErr
			}), idempotency.Middleware(tc.store, idempotency.Config{Clock: newFakeClock(start), Logger: newLogger(&logs), Observer: &events}))
			err := handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}"))
			if !tc.wantErr(err) {
				t.Errorf("Handle = %v; unexpected", err)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("logs lack %q:\n%s", tc.wantLog, logs.String())
			}
			if got := tc.store.puts.Load(); got != tc.wantPuts {
				t.Errorf("claims = %d; want %d", got, tc.wantPuts)
			}
			if got := tc.store.gets.Load(); got != tc.wantGets {
				t.Errorf("reads = %d; want %d", got, tc.wantGets)
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("handler calls = %d; want %d", got, tc.wantCalls)
			}
			if got := events.take(); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("observed %v; want %v", got, tc.wantEvents)
			}
		})
	}
}

// TestReadPathDecisions runs the duplicate decisions through Store.Get (no fast path).
func TestReadPathDecisions(t *testing.T) {
	t.Parallel()
	store := &idempotency.MemoryStore{DisableFastPath: true}
	clock := newFakeClock(start)
	block, started := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if calls.Add(1) == 1 {
			close(started)
			<-block
		}
		return nil
	}), idempotency.Middleware(store, idempotency.Config{Clock: clock, Random: noJitter, ClockSkewAllowance: -1, DuplicateWait: -1}))
	first := make(chan error)
	go func() { first <- handler.Handle(withDeadline(t, start.Add(20*time.Second)), message("m-1", "{}")) }()
	awaitStart(t, started, first)
	clock.Set(start.Add(5 * time.Second))
	wantOutcome(t, "in progress", handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}")), outcomeDefer(15*time.Second))
	wantOutcome(t, "mismatch in progress", handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{ }")), outcomeMismatch)
	close(block)
	if err := testenv.Recv(t, first, testenv.WaitTimeout, "first"); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "completed", handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}")), outcomeDelete)
	wantOutcome(t, "mismatch completed", handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{ }")), outcomeMismatch)
	if got := calls.Load(); got != 1 {
		t.Errorf("handler calls = %d; want 1", got)
	}
}

func TestOnCompletedDuplicate(t *testing.T) {
	t.Parallel()
	var got idempotency.Record
	hookErr := errors.New("republish failed")
	f := newFlow(t, idempotency.Config{OnCompletedDuplicate: func(_ context.Context, m *sqsworker.Message, r idempotency.Record) error {
		got = r
		return hookErr
	}})
	if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}")); err != nil {
		t.Fatal(err)
	}
	if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", "{}")); err != hookErr {
		t.Fatalf("duplicate = %v; want the hook's error", err)
	}
	if got.Status != idempotency.StatusCompleted || string(got.Result) != "result:m-1" {
		t.Errorf("hook record = %+v; want COMPLETED with result %q", got, "result:m-1")
	}
}

func TestSetResultOutsideMiddleware(t *testing.T) {
	t.Parallel()
	if idempotency.SetResult(t.Context(), []byte("x")) {
		t.Error("SetResult outside the middleware = true; want false")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	err := idempotency.Config{TTL: -time.Second, MinRemaining: -1, InProgressTTL: -1, StoreTimeout: -1}.Validate()
	for _, field := range []string{"TTL", "MinRemaining", "InProgressTTL", "StoreTimeout"} {
		if err == nil || !strings.Contains(err.Error(), "Config."+field) {
			t.Errorf("Validate() = %v; want it to name %s", err, field)
		}
	}
	if err := (idempotency.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	for name, build := range map[string]func(){
		"NilStore": func() { idempotency.Middleware(nil, idempotency.Config{}) },
		"InvalidConfig": func() {
			idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{TTL: time.Millisecond})
		},
		"NilHandler": func() { idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{})(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if value := recover(); value == nil || !strings.HasPrefix(value.(string), "idempotency: ") {
					t.Errorf("panic = %v; want an \"idempotency: \" panic", value)
				}
			}()
			build()
		})
	}
}

// TestLogsNeverContainBodies runs every decision and checks the logs carry the message
// fields but never the body.
func TestLogsNeverContainBodies(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	const secret = "4111-1111-1111-1111"
	f := newFlow(t, idempotency.Config{Logger: newLogger(&logs), KeyFunc: idempotency.KeyFromJSONField("id")})
	body := `{"id":"K-1","card":"` + secret + `"}`
	ctx := withDeadline(t, start.Add(time.Minute))
	_ = f.handler.Handle(ctx, message("m-1", body))                              // runs
	_ = f.handler.Handle(ctx, message("m-2", body))                              // completed duplicate
	_ = f.handler.Handle(ctx, message("m-3", `{"id":"K-1","card":"other"}`))     // mismatch
	_ = f.handler.Handle(ctx, message("m-4", `{"card":"`+secret+`"}`))           // key missing
	_ = f.handler.Handle(withDeadline(t, start), message("m-5", `{"id":"K-2"}`)) // insufficient time
	out := logs.String()
	if strings.Contains(out, secret) {
		t.Errorf("logs contain the body:\n%s", out)
	}
	for _, want := range []string{`"message_id":"m-3"`, `"queue":"https://sqs.test/q"`, `"receive_count":1`, `"idempotency_key":"idempotency##K-1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
}

// retriedPut simulates an SDK retry after a lost response: the first attempt's write
// lands, and the retry then fails its own condition, returning the record just written.
type retriedPut struct{ idempotency.Store }

func (s retriedPut) PutInProgress(ctx context.Context, r idempotency.Record, now time.Time) error {
	if err := s.Store.PutInProgress(ctx, r, now); err != nil {
		return err
	}
	written, err := s.Store.Get(ctx, r.Key)
	if err != nil {
		return err
	}
	return &idempotency.AlreadyExistsError{Key: r.Key, Existing: &written}
}

func TestClaimRecognisesItsOwnRetriedWrite(t *testing.T) {
	store := retriedPut{idempotency.NewMemoryStore()}
	calls := 0
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		calls++
		return nil
	}), idempotency.Middleware(store, idempotency.Config{}))
	if err := handler.Handle(t.Context(), message("m-retried", `{"x":1}`)); err != nil {
		t.Fatalf("Handle = %v, want nil: the conflicting record is this claim's own", err)
	}
	if calls != 1 {
		t.Errorf("handler ran %d times, want 1", calls)
	}
	record, err := store.Get(t.Context(), stored("m-retried"))
	if err != nil || record.Status != idempotency.StatusCompleted {
		t.Errorf("record %+v, %v; want COMPLETED", record, err)
	}
}
