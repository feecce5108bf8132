package sqsworker

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// Tenant counting bounds.
const (
	// DefaultMaxTenants is how many tenants a [TenantCounter] counts by name when
	// NewTenantCounter is given 0 or less.
	DefaultMaxTenants = 100
	// TenantOther names the counts of every tenant not counted by name (past the
	// bound, or before it was admitted) and of messages without a tenant. It contains a
	// space, which no MessageGroupId may, so no tenant shares its name.
	TenantOther = "other tenants"
)

// TenantStats is one tenant's counts, as [Stats] counts a host's.
type TenantStats struct {
	// Tenant is the tenant key (the message's MessageGroupId), or [TenantOther].
	Tenant string
	Stats
}

// TenantCounter is an [Observer] that counts events per tenant: the message's GroupID
// (MessageGroupId), which on a standard queue names the tenant of SQS fair queues and on
// a FIFO queue the message group. Whoever may send to the queue chooses the group id, so
// the counter names at most max tenants (fixed at creation) and counts the rest under
// [TenantOther]: a sender inventing tenants grows neither its memory nor the number of
// names it reports. A tenant is admitted at a receive: into a free place, or in place of
// the named tenant with the fewest receives that holds no message in flight (its counts
// move to TenantOther); when every named tenant holds messages in flight, the newcomer
// is counted under TenantOther. Busy tenants therefore keep their names, and a flood of
// one-message tenants churns only the quietest places. Every event of a message is
// counted where its receive was, so a tenant's InFlight is exact; the sum over all
// tenants and TenantOther equals a [Counter]'s counts. Messages without a group id are
// counted under TenantOther. Memory is bounded by max plus the messages in flight.
// The zero value counts DefaultMaxTenants by name. It is safe for concurrent use;
// Observe takes one lock.
type TenantCounter struct {
	max int

	mu      sync.Mutex
	tenants map[string]*Tally
	other   Tally
	// inFlight maps each message in flight to the tally its receive was counted in.
	inFlight map[string]*Tally
}

// NewTenantCounter returns a counter that names at most max tenants (if max is 0 or
// less, [DefaultMaxTenants]).
func NewTenantCounter(max int) *TenantCounter {
	if max <= 0 {
		max = DefaultMaxTenants
	}
	return &TenantCounter{max: max}
}

// Observe counts ev under its message's tenant.
func (c *TenantCounter) Observe(_ context.Context, ev Event) {
	if ev.Message == nil {
		return
	}
	tally := ev.Tally()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tenants == nil {
		c.tenants, c.inFlight = map[string]*Tally{}, map[string]*Tally{}
		c.max = cmp.Or(c.max, DefaultMaxTenants)
	}
	into, held := c.inFlight[ev.Message.ID]
	if !held {
		into = c.place(ev.Message.GroupID, ev.Kind == EventReceived)
	}
	for count, delta := range tally {
		into[count] += delta
	}
	switch {
	case tally[CountInFlight] > 0:
		c.inFlight[ev.Message.ID] = into
	case tally[CountInFlight] < 0:
		delete(c.inFlight, ev.Message.ID)
	}
}

// place returns the tally a message of tenant is counted in, admitting tenant when
// admit is set (a receive) and there is room or a quiet tenant to replace.
func (c *TenantCounter) place(tenant string, admit bool) *Tally {
	if tenant == "" {
		return &c.other
	}
	if tally, ok := c.tenants[tenant]; ok {
		return tally
	}
	if !admit {
		return &c.other
	}
	if len(c.tenants) >= c.max {
		victim, fewest := "", int64(-1)
		for name, tally := range c.tenants {
			if tally[CountInFlight] == 0 && (fewest < 0 || tally[CountReceived] < fewest) {
				victim, fewest = name, tally[CountReceived]
			}
		}
		if fewest < 0 {
			return &c.other
		}
		for count, value := range c.tenants[victim] {
			c.other[count] += value
		}
		delete(c.tenants, victim)
	}
	tally := &Tally{}
	c.tenants[tenant] = tally
	return tally
}

// Tenants returns the named tenants' counts, most received first (ties by name), then
// [TenantOther]'s.
func (c *TenantCounter) Tenants() []TenantStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	stats := make([]TenantStats, 0, len(c.tenants)+1)
	for name, tally := range c.tenants {
		stats = append(stats, TenantStats{Tenant: name, Stats: tally.Stats()})
	}
	slices.SortFunc(stats, func(a, b TenantStats) int {
		return cmp.Or(cmp.Compare(b.Received, a.Received), cmp.Compare(a.Tenant, b.Tenant))
	})
	return append(stats, TenantStats{Tenant: TenantOther, Stats: c.other.Stats()})
}
