package sqsworker_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

// life reports a message's receive, its handler's outcome and its delete.
func life(observer sqsworker.Observer, message *sqsworker.Message, outcome sqsworker.Outcome) {
	ctx := context.Background()
	observer.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: message})
	observer.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventFinished, Message: message, Outcome: outcome})
	observer.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: message})
}

func tenantsByName(stats []sqsworker.TenantStats) map[string]sqsworker.Stats {
	byName := map[string]sqsworker.Stats{}
	for _, s := range stats {
		byName[s.Tenant] = s.Stats
	}
	return byName
}

func TestTenantCounterCountsEachTenant(t *testing.T) {
	t.Parallel()
	counter := sqsworker.NewTenantCounter(10)
	life(counter, &sqsworker.Message{ID: "1", GroupID: "acme"}, sqsworker.Outcome{Kind: sqsworker.OutcomeDelete})
	life(counter, &sqsworker.Message{ID: "2", GroupID: "acme"}, sqsworker.Outcome{Kind: sqsworker.OutcomeRetry})
	life(counter, &sqsworker.Message{ID: "3", GroupID: "globex"}, sqsworker.Outcome{Kind: sqsworker.OutcomeDefer})
	life(counter, &sqsworker.Message{ID: "4"}, sqsworker.Outcome{Kind: sqsworker.OutcomeDelete})
	counter.Observe(context.Background(), sqsworker.Event{Kind: sqsworker.EventReceived, Message: &sqsworker.Message{ID: "5", GroupID: "globex"}})

	stats := counter.Tenants()
	require.Len(t, stats, 3)
	assert.Equal(t, []string{"acme", "globex", sqsworker.TenantOther}, []string{stats[0].Tenant, stats[1].Tenant, stats[2].Tenant}, "most received first, other last")
	byName := tenantsByName(stats)
	assert.Equal(t, sqsworker.Stats{Received: 2, Deleted: 2, Failed: 1}, byName["acme"])
	assert.Equal(t, sqsworker.Stats{Received: 2, InFlight: 1, Deleted: 1, Deferred: 1}, byName["globex"], "a deferral is not a failure")
	assert.Equal(t, sqsworker.Stats{Received: 1, Deleted: 1}, byName[sqsworker.TenantOther], "no group id: other")
}

// A sender inventing a tenant per message grows neither the names nor the memory past
// the bound; the busy tenants keep their names, and nothing is lost from the sums.
func TestTenantCounterBoundsInventedTenants(t *testing.T) {
	t.Parallel()
	counter := sqsworker.NewTenantCounter(4)
	total := sqsworker.Counter{}
	both := sqsworker.Observers(counter, &total)
	for i := range 20 {
		life(both, &sqsworker.Message{ID: "busy-" + strconv.Itoa(i), GroupID: "busy"}, sqsworker.Outcome{Kind: sqsworker.OutcomeDelete})
	}
	// A message of a busy tenant stays in flight while the flood goes on.
	ctx := context.Background()
	held := &sqsworker.Message{ID: "held", GroupID: "held"}
	both.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: held})
	for i := range 10_000 {
		life(both, &sqsworker.Message{ID: "x-" + strconv.Itoa(i), GroupID: "invented-" + strconv.Itoa(i)}, sqsworker.Outcome{Kind: sqsworker.OutcomeDelete})
	}
	both.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: held})

	stats := counter.Tenants()
	assert.LessOrEqual(t, len(stats), 4+1, "at most max names and other")
	byName := tenantsByName(stats)
	assert.Equal(t, sqsworker.Stats{Received: 20, Deleted: 20}, byName["busy"], "the busy tenant keeps its name")
	assert.Equal(t, sqsworker.Stats{Received: 1, Deleted: 1}, byName["held"], "a tenant with a message in flight is never replaced")
	var sum sqsworker.Tally
	for _, s := range stats {
		sum[sqsworker.CountReceived] += s.Received
		sum[sqsworker.CountDeleted] += s.Deleted
		sum[sqsworker.CountInFlight] += s.InFlight
	}
	assert.Equal(t, total.Stats().Received, sum[sqsworker.CountReceived], "receives sum to the host's")
	assert.Equal(t, total.Stats().Deleted, sum[sqsworker.CountDeleted])
	assert.Zero(t, sum[sqsworker.CountInFlight])
}

// Every event of a message counts where its receive did, even when its tenant was
// admitted or replaced in between: no tenant's InFlight goes below zero.
func TestTenantCounterKeepsAMessageWhereItsReceiveWas(t *testing.T) {
	t.Parallel()
	counter := sqsworker.NewTenantCounter(1)
	ctx := context.Background()
	first := &sqsworker.Message{ID: "a-1", GroupID: "a"}
	counter.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: first})
	early := &sqsworker.Message{ID: "b-1", GroupID: "b"} // counted under other: a holds the one place
	counter.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: early})
	counter.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: first})
	counter.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived, Message: &sqsworker.Message{ID: "b-2", GroupID: "b"}}) // b replaces a
	counter.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventDeleted, Message: early})

	byName := tenantsByName(counter.Tenants())
	assert.Equal(t, sqsworker.Stats{Received: 1, InFlight: 1}, byName["b"])
	assert.Equal(t, sqsworker.Stats{Received: 2, Deleted: 2}, byName[sqsworker.TenantOther], "a's counts and b's first message")
}
