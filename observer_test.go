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
