package poller

import (
	"context"
	"testing"

	"github.com/sqsworker/sqsworker"
)

// TestStatsCarryEveryMessageCount: the server's Stats hold every count of
// sqsworker.Stats, dead-letter failures included, as a Counter over the same events has.
func TestStatsCarryEveryMessageCount(t *testing.T) {
	t.Parallel()
	var c counters
	var want sqsworker.Counter
	ctx := context.Background()
	for _, kind := range sqsworker.EventKinds() {
		ev := sqsworker.Event{Kind: kind, Outcome: sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter}}
		c.events.Observe(ctx, ev)
		want.Observe(ctx, ev)
	}
	got := c.snapshot()
	if got.Stats != want.Stats() {
		t.Errorf("message counts = %+v, want %+v", got.Stats, want.Stats())
	}
	if got.DeadLetterFailures != 1 {
		t.Errorf("DeadLetterFailures = %d, want 1", got.DeadLetterFailures)
	}
}
