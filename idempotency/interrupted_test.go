package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// TestInterruptedReceivesAreNoAttempts: a handler whose context the host ends with an
// ErrInterrupted cause (a drain deadline) leaves its record with the count; each next
// claim of the same message sets Message.Interrupted, so Attempt does not count those
// receives; a failure after them keeps the count; another message under the key starts
// from zero. DynamoDB calls: the interruption's update takes the place of the failure's
// delete; each receive after an interruption costs one more put (its claim conflicts
// with the kept record, then takes it over).
func TestInterruptedReceivesAreNoAttempts(t *testing.T) {
	t.Parallel()
	table := newEmulatorTable(t)
	for name, store := range map[string]idempotency.Store{"memory": idempotency.NewMemoryStore(), "dynamodb": table.store()} {
		t.Run(name, func(t *testing.T) {
			var seen []int                        // Message.Attempt at each call
			var interrupt context.CancelCauseFunc // set for a call the host interrupts
			handler := idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromMessageID})(sqsworker.HandlerFunc(
				func(ctx context.Context, m *sqsworker.Message) error {
					seen = append(seen, m.Attempt())
					if interrupt != nil {
						// The host's drain deadline comes while the handler runs.
						interrupt(fmt.Errorf("drain deadline (%w)", sqsworker.ErrInterrupted))
						<-ctx.Done()
						return ctx.Err()
					}
					return errors.New("downstream 503")
				}))
			call := func(receiveCount int, interrupted bool, id string) {
				t.Helper()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				interrupt = nil
				if interrupted {
					interrupt = cancel
				}
				_ = handler.Handle(ctx, &sqsworker.Message{ID: id, ReceiveCount: receiveCount})
			}
			for rc := 1; rc <= 3; rc++ {
				call(rc, true, "m-"+name)
			}
			call(4, false, "m-"+name) // attempt 1 fails
			call(5, false, "m-"+name) // attempt 2 fails
			call(1, false, "other-"+name)
			want := []int{1, 1, 1, 1, 2, 1}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Errorf("attempts seen %v, want %v", seen, want)
			}
		})
	}
	// DynamoDB calls: each of the 6 receives claims (1 put, and 1 more for the 4 that
	// take over an interrupted record) and ends with 1 write (3 interruption updates, 2
	// updates keeping the count after failures, 1 delete).
	// A PutItem the SDK retried after a lost response (seen under load: a response
	// checksum mismatch) conflicts with its own first write and costs one more claim round.
	puts := table.api.puts.Load()
	if got, want := fmt.Sprintf("get=%d update=%d delete=%d", table.api.gets.Load(), table.api.updates.Load(), table.api.deletes.Load()), "get=0 update=5 delete=1"; got != want || puts < 10 || puts > 12 {
		t.Errorf("DynamoDB calls put=%d %s, want put=10 (up to 2 more after SDK retries) %s", puts, got, want)
	}
}
