package sqsworker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
)

func TestObserversTellEachInOrderAndSkipNil(t *testing.T) {
	t.Parallel()
	var got []string
	record := func(name string) sqsworker.Observer {
		return sqsworker.ObserverFunc(func(_ context.Context, ev sqsworker.Event) { got = append(got, name+":"+ev.Kind.String()) })
	}
	combined := sqsworker.Observers(record("a"), nil, sqsworker.Observers(record("b"), record("c")))
	combined.Observe(context.Background(), sqsworker.Event{Kind: sqsworker.EventReceived})
	assert.Equal(t, []string{"a:received", "b:received", "c:received"}, got)
	assert.Equal(t, sqsworker.NopObserver, sqsworker.Observers())
	assert.Equal(t, sqsworker.NopObserver, sqsworker.Observers(nil))
}

func TestCounterCountsMessagesByFate(t *testing.T) {
	t.Parallel()
	var c sqsworker.Counter
	ctx := context.Background()
	for _, kind := range []sqsworker.EventKind{sqsworker.EventReceived, sqsworker.EventReceived, sqsworker.EventReceived, sqsworker.EventReceived} {
		c.Observe(ctx, sqsworker.Event{Kind: kind})
	}
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Outcome: sqsworker.Classify(nil)})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Outcome: sqsworker.Classify(errors.New("x"))})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventRescheduled})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Outcome: sqsworker.Classify(sqsworker.Defer(1, "later"))})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventRescheduleFailed})
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventAbandoned})
	assert.Equal(t, sqsworker.Stats{Received: 4, InFlight: 1, Deleted: 1, Failed: 1, Deferred: 1, RescheduleFailures: 1, Abandoned: 1}, c.Stats())
	c.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReleased})
	assert.Equal(t, int64(0), c.Stats().InFlight)
	assert.Equal(t, "unknown", sqsworker.EventKind(0).String())
}

// TestEveryCountHasItsMetric: every count but failed and deferred (shown by outcome) names
// a metric of its own, with a unit and a description, no two alike; only in flight goes
// down; a value that is not a count has none.
func TestEveryCountHasItsMetric(t *testing.T) {
	names := map[string]sqsworker.Count{}
	for count := range sqsworker.NumCounts {
		m := count.Metric()
		if count == sqsworker.CountFailed || count == sqsworker.CountDeferred {
			assert.Equal(t, sqsworker.CountMetric{}, m, "count %d", count)
			continue
		}
		assert.NotEmpty(t, m.Name, "count %d", count)
		assert.NotEmpty(t, m.Unit, "count %d", count)
		assert.NotEmpty(t, m.Description, "count %d", count)
		assert.Equal(t, count == sqsworker.CountInFlight, m.UpDown, "count %d", count)
		_, taken := names[m.Name]
		assert.False(t, taken, "%s named twice", m.Name)
		names[m.Name] = count
	}
	assert.Equal(t, sqsworker.CountMetric{}, sqsworker.NumCounts.Metric())
	assert.Equal(t, sqsworker.CountMetric{}, sqsworker.Count(-1).Metric())
}
