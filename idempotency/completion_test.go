package idempotency_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// TestOversizedResultStillCompletes (moto): a result over DynamoDB's 400 KB item limit
// made completion fail (ValidationException), so the record stayed IN_PROGRESS and the
// duplicate that came after its lease ran the handler again. Now the record completes
// without the result, with one warning line saying so, and the duplicate is suppressed.
// 420,000 bytes is over AWS's limit (the store refuses it before calling DynamoDB: one
// UpdateItem); 406,000 bytes fits AWS's 409,600 but not moto's 405,000, so moto refuses
// it and the store completes again without it (two UpdateItems).
func TestOversizedResultStillCompletes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		size    int
		updates int64
	}{
		{name: "over AWS's limit", size: 420_000, updates: 1},
		{name: "refused by the emulator", size: 406_000, updates: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			emulator := newEmulatorTable(t)
			clock := newFakeClock(time.Now())
			var logs logBuffer
			var calls atomic.Int64
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
				calls.Add(1)
				idempotency.SetResult(ctx, []byte(strings.Repeat("r", c.size)))
				return nil
			}), idempotency.Middleware(emulator.store(), idempotency.Config{
				KeyFunc: idempotency.KeyFromJSONField("id"), Clock: clock, Logger: newLogger(&logs), DuplicateWait: -1,
			}))
			if err := handler.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"})); err != nil {
				t.Fatalf("original: %v", err)
			}
			if got := emulator.api.updates.Load(); got != c.updates {
				t.Errorf("UpdateItem calls %d; want %d", got, c.updates)
			}
			// (moto applies the SET actions of an update it then refuses for its size, so
			// status alone does not show a failed completion there; the lease expiry,
			// removed by the same update, does. localstack/README.md.)
			raw := emulator.raw(t, "K")
			if attribute(raw, "status") != "S:COMPLETED" || attribute(raw, "data") != "" || attribute(raw, "in_progress_expiry") != "" {
				t.Errorf("record %.200s; want COMPLETED without data or lease expiry", raw)
			}
			warnings := strings.Count(logs.String(), `"level":"WARN","msg":"idempotency: the handler's result does not fit in the record; completed without it`)
			if warnings != 1 || strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Errorf("log:\n%s\nwant one warning that the result was left out, no error", logs.String())
			}
			// The duplicate comes after the original's lease would have ended.
			clock.Set(clock.Now().Add(time.Minute))
			err := handler.Handle(t.Context(), jsonMessage("m2", map[string]any{"id": "K"}))
			wantOutcome(t, "duplicate", err, outcomeDelete)
			if got := calls.Load(); got != 1 {
				t.Errorf("handler calls %d; want 1", got)
			}
		})
	}
}

// TestResultThatFitsIsStored (moto): a result well under the limit is kept and given to
// the duplicate.
func TestResultThatFitsIsStored(t *testing.T) {
	t.Parallel()
	emulator := newEmulatorTable(t)
	result := strings.Repeat("r", 300_000)
	var replayed atomic.Int64
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		idempotency.SetResult(ctx, []byte(result))
		return nil
	}), idempotency.Middleware(emulator.store(), idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField("id"),
		OnCompletedDuplicate: func(_ context.Context, _ *sqsworker.Message, r idempotency.Record) error {
			replayed.Store(int64(len(r.Result)))
			return nil
		},
	}))
	for _, id := range []string{"m1", "m2"} {
		if err := handler.Handle(t.Context(), jsonMessage(id, map[string]any{"id": "K"})); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if got := replayed.Load(); got != int64(len(result)) {
		t.Errorf("duplicate got a %d-byte result; want %d", got, len(result))
	}
}
