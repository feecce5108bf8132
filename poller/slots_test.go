package poller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
)

// fill has q receive and keep (as running messages) every slot grant gives it now, and
// returns how many.
func fill(p *pool, q *poolQueue) int {
	p.mu.Lock()
	q.waiting++
	n, probe := p.grant(q, 10)
	q.waiting--
	if n > 0 {
		p.take(q, n, probe)
	}
	p.mu.Unlock()
	if n > 0 {
		p.received(q, n, n, probe, true)
	}
	return n
}

// TestPoolMinSlotsReserved: a queue's MinSlots are taken by no other queue, whatever
// the weights: with every other slot held by long jobs of the low queue, the critical
// queue still gets its 2, and each slot it frees again.
func TestPoolMinSlotsReserved(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		p := newPool(10, strict, poolSpec{weight: 6, minSlots: 2}, poolSpec{weight: 3}, poolSpec{weight: 1})
		critical, normal, low := p.queues[0], p.queues[1], p.queues[2]
		if !strict {
			makeBusy(t, p)
		} else {
			// Under strict priority the lower queues go once the higher came back empty.
			critical.idle, normal.idle = true, true
		}
		if n := fill(p, low); n != 8 {
			t.Fatalf("strict %v: low queue took %d slots, want the 8 not reserved", strict, n)
		}
		if got := grants(p, 10); got[1] != 0 || got[2] != 0 {
			t.Fatalf("strict %v: grants with the reservation left = %v, want none for default and low", strict, got)
		}
		critical.idle = false // its probe brought a message
		if n := fill(p, critical); n != 2 {
			t.Fatalf("strict %v: critical took %d slots, want its 2 reserved", strict, n)
		}
		p.release(critical, 1)
		if got := grants(p, 10); got[0] != 1 || got[1] != 0 || got[2] != 0 {
			t.Fatalf("strict %v: grants after a critical job ended = %v, want 1 for critical only", strict, got)
		}
	}
}

// TestPoolReservationServesAtOnce: a receive within the queue's reservation does not
// wait for a full batch while other receives are in flight, and does not yield to a
// queue of lower pass, which could not use the slot.
func TestPoolReservationServesAtOnce(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{weight: 1, minSlots: 2}, poolSpec{weight: 100})
	critical, low := p.queues[0], p.queues[1]
	makeBusy(t, p)
	critical.pass = 1000 // far behind by weight: the low queue would go first
	if n := fill(p, low); n != 8 {
		t.Fatalf("low took %d, want 8", n)
	}
	p.mu.Lock()
	low.waiting++
	n, _ := p.grant(low, 10)
	p.take(low, 0, false) // a receive of low in flight (p.polls > 0)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("low granted %d beside the reservation, want 0", n)
	}
	if got := grants(p, 10); got[0] != 2 {
		t.Fatalf("critical granted %d with a receive in flight, want its 2 reserved at once", got[0])
	}
}

// TestPoolMaxSlotsBound: a queue at its MaxSlots is not granted more; the other queues
// take the rest.
func TestPoolMaxSlotsBound(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{weight: 6}, poolSpec{weight: 1, maxSlots: 7})
	low := p.queues[1]
	makeBusy(t, p)
	if n := fill(p, low); n != 7 {
		t.Fatalf("low took %d, want its MaxSlots 7", n)
	}
	if got := grants(p, 10); got[0] != 3 || got[1] != 0 {
		t.Fatalf("grants = %v, want 3 for critical and none for low", got)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestPoolStrictAging: under strict priority with every slot held by the high queue
// and the high queue's receive waiting for more, the low queue's waiting receive gets
// the first slot freed once it has waited MaxWait (not before), the aging is reported
// once its receive brought a message, and then the high queue goes first again.
func TestPoolStrictAging(t *testing.T) {
	t.Parallel()
	const maxWait = 5 * time.Minute
	clock := &fakeClock{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	p := newPool(10, true, poolSpec{weight: 10}, poolSpec{weight: 1, maxWait: maxWait})
	p.now = clock.Now
	type aging struct {
		index           int
		maxWait, waited time.Duration
	}
	agings := make(chan aging, 4)
	p.aging = func(index int, maxWait, waited time.Duration) { agings <- aging{index, maxWait, waited} }
	high, low := p.queues[0], p.queues[1]
	if n := fill(p, high); n != 10 {
		t.Fatalf("high took %d, want 10", n)
	}
	stop := make(chan struct{})
	defer close(stop)
	lowGot, highGot := make(chan int, 1), make(chan int, 1)
	go func() { n, _ := p.acquire(low, stop, 10); lowGot <- n }()
	waitFor(t, "the low queue's receive held back", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !low.blockedSince.IsZero()
	})
	go func() { n, _ := p.acquire(high, stop, 10); highGot <- n }()
	waitFor(t, "the high queue's receive waiting", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return high.waiting == 1
	})

	// Before MaxWait a freed slot goes to the high queue.
	clock.advance(maxWait - time.Second)
	p.release(high, 1)
	if n := <-highGot; n != 1 {
		t.Fatalf("high acquired %d, want the freed slot", n)
	}
	p.received(high, 1, 1, false, true)
	go func() { n, _ := p.acquire(high, stop, 10); highGot <- n }()
	waitFor(t, "the high queue's receive waiting again", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return high.waiting == 1
	})

	// At MaxWait the low queue has aged: the next freed slot is its, not the high
	// queue's, though the high queue still has messages.
	clock.advance(time.Second)
	p.release(high, 1)
	if n := <-lowGot; n != 1 {
		t.Fatalf("aged low queue acquired %d, want 1", n)
	}
	select {
	case n := <-highGot:
		t.Fatalf("high acquired %d while the low queue had aged", n)
	default:
	}
	if len(agings) != 0 {
		t.Fatal("the aging was reported before its receive brought a message")
	}
	p.received(low, 1, 1, false, true)
	select {
	case a := <-agings:
		if a.index != 1 || a.maxWait != maxWait || a.waited != maxWait {
			t.Fatalf("aging reported %+v, want queue 1 after %s", a, maxWait)
		}
	default:
		t.Fatal("the aging was not reported")
	}

	// Served, the low queue yields again: the next slot is the high queue's.
	p.release(high, 1)
	if n := <-highGot; n != 1 {
		t.Fatalf("high acquired %d after the low queue's turn, want 1", n)
	}
	if len(agings) != 0 {
		t.Fatalf("%d more agings reported, want one", len(agings))
	}
}

// waitFor waits until cond holds (checked every millisecond), failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlotsConfigErrors: New refuses reservations above the concurrency, with the
// numbers, and the other impossible slot settings, each naming its field.
func TestSlotsConfigErrors(t *testing.T) {
	t.Parallel()
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	cases := []struct {
		name   string
		config Config
		want   []string
	}{
		{"total", Config{Concurrency: 10, Queues: []QueueConfig{{URL: "a", MinSlots: 8}, {URL: "b", MinSlots: 4}}},
			[]string{"poller: MinSlots total 12 exceeds concurrency 10"}},
		{"above max", Config{Concurrency: 10, Queues: []QueueConfig{{URL: "a", MinSlots: 3, MaxSlots: 2}, {URL: "b", MinSlots: -1, MaxSlots: -2}}},
			[]string{"Config.Queues[0].MinSlots 3 exceeds its MaxSlots 2", "Config.Queues[1].MinSlots -1 is negative", "Config.Queues[1].MaxSlots -2 is negative"}},
		{"prefetch", Config{Concurrency: 10, Prefetch: 5, Queues: []QueueConfig{{URL: "a", MinSlots: 2}, {URL: "b"}}},
			[]string{"Config.Prefetch 5 cannot be combined with MinSlots"}},
		{"max wait", Config{Queues: []QueueConfig{{URL: "a", MaxWait: time.Minute}, {URL: "b", MaxWait: -time.Second}}},
			[]string{"Config.Queues[0].MaxWait 1m0s requires Config.Priority Strict", "Config.Queues[1].MaxWait -1s is negative"}},
		{"queue max concurrency", Config{Queues: []QueueConfig{{URL: "a", Limit: Limit{MaxConcurrency: 4}}}},
			[]string{"Config.Queues[0].Limit.MaxConcurrency 4: a queue's slot bound is Config.Queues[0].MaxSlots"}},
	}
	for _, c := range cases {
		_, err := New(newFakeAPI(), c.config, handler)
		if err == nil {
			t.Errorf("%s: New accepted %+v", c.name, c.config)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error lacks %q:\n%v", c.name, want, err)
			}
		}
	}
	if _, err := New(newFakeAPI(), Config{Concurrency: 10, Priority: Strict, Queues: []QueueConfig{{URL: "a", MinSlots: 8, MaxSlots: 10}, {URL: "b", MinSlots: 2, MaxWait: time.Minute}}}, handler); err != nil {
		t.Errorf("New refused reservations that fit: %v", err)
	}
}
