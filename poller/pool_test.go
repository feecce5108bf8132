package poller

import (
	"testing"
	"time"
)

// grants returns, for every queue of p with a receive waiting (all of them), how many
// slots grant gives it now, as acquire would see it after a broadcast.
func grants(p *pool, limit int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.queues {
		q.waiting++
	}
	out := make([]int, len(p.queues))
	for i, q := range p.queues {
		out[i], _ = p.grant(q, limit)
	}
	for _, q := range p.queues {
		q.waiting--
	}
	return out
}

// takeGranted grants and takes the one receive that may go now, as the woken acquire
// calls would; it fails the test unless exactly one queue may go.
func takeGranted(t *testing.T, p *pool, limit int) (*poolQueue, int, bool) {
	t.Helper()
	granted := grants(p, limit)
	var chosen []int
	for i, n := range granted {
		if n > 0 {
			chosen = append(chosen, i)
		}
	}
	if len(chosen) != 1 {
		t.Fatalf("grants = %v, want exactly one queue to go", granted)
	}
	q := p.queues[chosen[0]]
	p.mu.Lock()
	defer p.mu.Unlock()
	n, probe := p.grant(q, limit)
	p.take(q, n, probe)
	return q, n, probe
}

// makeBusy answers one probe of each idle queue with a message and settles it.
func makeBusy(t *testing.T, p *pool) {
	t.Helper()
	for _, q := range p.queues {
		p.mu.Lock()
		if !q.idle {
			p.mu.Unlock()
			continue
		}
		n, probe := p.grant(q, 10)
		if n != 1 || !probe {
			p.mu.Unlock()
			t.Fatalf("idle queue %d: grant = %d (probe %v), want a probe of 1", q.index, n, probe)
		}
		p.take(q, n, probe)
		p.mu.Unlock()
		p.received(q, 1, 1, true, true)
		p.release(q, 1)
	}
}

// TestPoolWeightedShares: three full queues of weights 6, 3 and 1 get exactly 60%, 30%
// and 10% of the messages received, whatever the batch sizes.
func TestPoolWeightedShares(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 7, 10, 20} {
		p := newPool(concurrency, false, poolSpec{weight: 6}, poolSpec{weight: 3}, poolSpec{weight: 1})
		makeBusy(t, p)
		counts := make([]int, 3)
		total := 0
		for total < 10000 {
			q, n, probe := takeGranted(t, p, 10)
			if probe {
				t.Fatalf("queue %d: a probe while busy", q.index)
			}
			p.received(q, n, n, false, true)
			p.release(q, n)
			counts[q.index] += n
			total += n
		}
		for i, want := range []float64{0.6, 0.3, 0.1} {
			if share := float64(counts[i]) / float64(total); share < want-0.01 || share > want+0.01 {
				t.Errorf("concurrency %d: queue %d got %.3f of %d messages (counts %v), want %.2f", concurrency, i, share, total, counts, want)
			}
		}
	}
}

// TestPoolIdleQueueKeepsOneProbe: an idle queue has one receive in flight, for one
// message; the busy queue gets every other slot, and the idle queue's share of a
// message makes it busy again at the busy queue's pass (no credit for idleness).
func TestPoolIdleQueueKeepsOneProbe(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{weight: 1}, poolSpec{weight: 1})
	busy, idle := p.queues[0], p.queues[1]
	// Both start idle: one probe each, for one message.
	if got := grants(p, 10); got[0] != 1 || got[1] != 1 {
		t.Fatalf("grants at start = %v, want probes of 1 and 1", got)
	}
	makeBusy(t, p)
	// The second queue comes back empty: idle.
	p.mu.Lock()
	n, _ := p.grant(idle, 10)
	p.take(idle, n, false)
	p.mu.Unlock()
	p.received(idle, n, 0, false, true)
	if !idle.idle {
		t.Fatal("an empty receive did not make the queue idle")
	}
	p.mu.Lock()
	n, probe := p.grant(idle, 10)
	p.take(idle, n, probe)
	p.mu.Unlock()
	if n != 1 || !probe {
		t.Fatalf("idle queue's receive: %d slots (probe %v), want a probe of 1", n, probe)
	}
	if got := grants(p, 10); got[1] != 0 {
		t.Fatalf("second receive on the idle queue granted %d, want 0 (one in flight)", got[1])
	}
	// The busy queue takes the other 9 as soon as they are free.
	p.mu.Lock()
	n, _ = p.grant(busy, 10)
	p.take(busy, n, false)
	p.mu.Unlock()
	if n != 9 {
		t.Fatalf("busy queue granted %d beside the probe, want 9", n)
	}
	p.received(busy, 9, 9, false, true)
	p.received(idle, 1, 1, true, true)
	if idle.idle {
		t.Fatal("a probe that brought a message left the queue idle")
	}
	if idle.pass < busy.pass {
		t.Fatalf("queue back from idle at pass %.1f, below the busy queue's %.1f: idleness earned credit", idle.pass, busy.pass)
	}
}

// TestPoolStrictPriority: the lower queue is granted nothing while the higher one is
// busy, and is polled once the higher one came back empty; the higher one's probe
// bringing a message stops the lower one again.
func TestPoolStrictPriority(t *testing.T) {
	t.Parallel()
	p := newPool(10, true, poolSpec{weight: 1}, poolSpec{weight: 5})
	high := p.queues[1]
	if got := grants(p, 10); got[0] != 0 || got[1] != 10 {
		t.Fatalf("grants at start = %v, want the low queue 0 and the high queue 10", got)
	}
	for range 3 {
		p.mu.Lock()
		n, _ := p.grant(high, 10)
		p.take(high, n, false)
		p.mu.Unlock()
		p.received(high, n, n, false, true)
		if got := grants(p, 10); got[0] != 0 {
			t.Fatalf("low queue granted %d while the high queue has messages", got[0])
		}
		p.release(high, n)
	}
	p.mu.Lock()
	n, _ := p.grant(high, 10)
	p.take(high, n, false)
	p.mu.Unlock()
	p.received(high, n, 0, false, true) // empty
	if got := grants(p, 10); got[0] != 10 || got[1] != 1 {
		t.Fatalf("grants after the high queue came back empty = %v, want 10 for the low queue and a probe of 1 for the high one", got)
	}
	p.mu.Lock()
	n, probe := p.grant(high, 10)
	p.take(high, n, probe)
	p.mu.Unlock()
	p.received(high, n, 1, probe, true)
	if got := grants(p, 10); got[0] != 0 {
		t.Fatalf("low queue granted %d after the high queue's probe brought a message", got[0])
	}
}

// TestPoolQueueMaxSlots: a queue never holds more than its MaxSlots;
// the other queue gets the rest.
func TestPoolQueueMaxSlots(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{weight: 100, maxSlots: 3}, poolSpec{weight: 1})
	capped := p.queues[0]
	makeBusy(t, p)
	p.mu.Lock()
	n, _ := p.grant(capped, 10)
	p.take(capped, n, false)
	p.mu.Unlock()
	if n != 3 {
		t.Fatalf("capped queue granted %d, want its MaxSlots 3", n)
	}
	p.received(capped, 3, 3, false, true)
	if got := grants(p, 10); got[0] != 0 || got[1] != 7 {
		t.Fatalf("grants with the capped queue at its limit = %v, want 0 and the other 7", got)
	}
	p.release(capped, 1)
	if got := grants(p, 10); got[0] != 1 {
		t.Fatalf("capped queue after one release granted %d, want 1", got[0])
	}
}

// TestPoolSingleQueueUnchanged: with one queue an empty receive changes nothing (no
// idle probe), as before several queues were supported.
func TestPoolSingleQueueUnchanged(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{})
	q := p.queues[0]
	for range 3 {
		taken, probe := p.acquire(q, nil, 10)
		if taken != 10 || probe {
			t.Fatalf("acquire = %d (probe %v), want 10, no probe", taken, probe)
		}
		p.received(q, taken, 0, probe, true)
	}
}

// TestPoolAcquireStops: a waiting acquire returns 0 at stop and lets another queue go.
func TestPoolAcquireStops(t *testing.T) {
	t.Parallel()
	p := newPool(1, false, poolSpec{}, poolSpec{})
	makeBusy(t, p)
	first := p.queues[0]
	taken, _ := p.acquire(first, nil, 10)
	if taken != 1 {
		t.Fatalf("acquire = %d, want 1", taken)
	}
	stop := make(chan struct{})
	result := make(chan int)
	go func() {
		n, _ := p.acquire(p.queues[1], stop, 10)
		result <- n
	}()
	close(stop)
	select {
	case n := <-result:
		if n != 0 {
			t.Fatalf("acquire after stop = %d, want 0", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not return after stop")
	}
}

// TestPoolGather: with ReceiveGather a receive that could take only part of a batch
// waits for more slots to free, and goes at once when a full batch is free.
func TestPoolGather(t *testing.T) {
	t.Parallel()
	p := newPool(10, false, poolSpec{})
	p.gather = time.Minute
	q := p.queues[0]
	taken, _ := p.acquire(q, nil, 10)
	p.received(q, taken, 10, false, true) // 10 held
	p.release(q, 3)
	result := make(chan int, 1)
	go func() {
		n, _ := p.acquire(q, nil, 10)
		result <- n
	}()
	select {
	case n := <-result:
		t.Fatalf("acquire took %d of 10 slots within 100 ms; want it to gather for a full batch", n)
	case <-time.After(100 * time.Millisecond):
	}
	p.release(q, 7)
	select {
	case n := <-result:
		if n != 10 {
			t.Fatalf("acquire = %d, want the full batch of 10", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not go once a full batch was free")
	}
	p.received(q, 10, 0, false, true)

	// Gathering ends after ReceiveGather with what is free.
	p.gather = 20 * time.Millisecond
	taken, _ = p.acquire(q, nil, 10)
	p.received(q, taken, 10, false, true)
	p.release(q, 4)
	if n, _ := p.acquire(q, nil, 10); n != 4 {
		t.Fatalf("acquire after the gather window = %d, want the 4 free", n)
	}
}

// TestPoolWeightedSharesWithPrefetch: with Config.Prefetch the pool's capacity is
// Concurrency + Prefetch and held messages count against their queue; settling them one
// at a time in receive order, as the dispatcher's turns start them, three full queues of
// weights 6, 3 and 1 still get 60%, 30% and 10% of the messages, in batches of 10.
func TestPoolWeightedSharesWithPrefetch(t *testing.T) {
	t.Parallel()
	const concurrency, prefetch = 20, 10
	p := newPool(concurrency+prefetch, false, poolSpec{weight: 6}, poolSpec{weight: 3}, poolSpec{weight: 1})
	p.prefetch = prefetch
	makeBusy(t, p)
	var held []*poolQueue // received, in order, not settled
	counts := make([]int, 3)
	total, receives := 0, 0
	for total < 10000 {
		for {
			granted := grants(p, 10)
			if granted[0]+granted[1]+granted[2] > 0 {
				break
			}
			p.release(held[0], 1) // the oldest message's handler returns
			held = held[1:]
		}
		q, n, probe := takeGranted(t, p, 10)
		if probe {
			t.Fatalf("queue %d: a probe while busy", q.index)
		}
		if receives > 0 && n != 10 {
			t.Fatalf("receive %d on queue %d asked for %d, want a full batch of 10", receives, q.index, n)
		}
		p.received(q, n, n, false, true)
		for range n {
			held = append(held, q)
		}
		counts[q.index] += n
		total += n
		receives++
	}
	for i, want := range []float64{0.6, 0.3, 0.1} {
		if share := float64(counts[i]) / float64(total); share < want-0.01 || share > want+0.01 {
			t.Errorf("queue %d got %.3f of %d messages (counts %v), want %.2f", i, share, total, counts, want)
		}
	}
}
