package poller

import (
	"sync"
	"time"
)

// pool is the counting semaphore behind Config.Concurrency, shared by every queue of a
// server, and the scheduler that decides which queue's receive gets freed slots
// (Config.Priority, QueueConfig.Weight and QueueConfig.Limit.MaxConcurrency). A receive
// takes a slot for each message it asks for; it gives back those it did not get when it
// returns, and a message's slot is given back when the message is settled. So the
// receives in flight together never ask for more messages than there are free slots.
//
// With several queues:
//
//   - Weighted (the default) is stride scheduling over messages: each queue has a pass
//     that a receive advances by messages/weight; freed slots go to the waiting queue
//     with the lowest pass. Under load each queue gets weight/Σweights of the messages
//     received (so of the handled messages, and of the slots when handlers take alike),
//     and no queue with messages is starved. A queue that comes back from idle starts
//     at the lowest pass of the busy queues, so idleness earns no credit.
//   - Strict: a queue's receive starts only while every queue of higher weight is idle.
//   - A queue whose last receive came back empty is idle: it keeps one receive in flight
//     (a probe asking for one message, so an empty long poll holds one slot, not ten);
//     when the probe brings a message the queue is busy again and receives full batches.
//     In strict mode queues start busy, so a lower queue waits for the higher ones' first
//     empty receive; in weighted mode they start idle (one probe each).
//
// With one queue none of this applies and it behaves as it always has: an empty receive
// changes nothing and every receive asks for the free slots.
//
// With Config.Prefetch the pool's capacity is Concurrency + Prefetch: up to Prefetch
// messages are held received but not started (the dispatcher's turns keep the running
// handlers to Concurrency), and a receive with no other in flight waits for Prefetch
// free slots (or a full batch, if fewer) instead of going at the first one, since the
// held messages keep the handlers busy meanwhile.
type pool struct {
	capacity int
	strict   bool
	queues   []*poolQueue
	// gather is Config.ReceiveGather: how long a receive with no other in flight waits
	// for more slots to free before asking for fewer than a full batch.
	gather time.Duration
	// prefetch is Config.Prefetch: the slots beyond Concurrency in capacity, and what a
	// receive with no other in flight waits for (see want).
	prefetch int

	mu      sync.Mutex
	taken   int           // by receives in flight and by the messages held
	polling int           // of taken, by receives in flight
	polls   int           // receives in flight, probes of idle queues excepted
	waiters int           // acquire calls waiting for changed
	changed chan struct{} // closed, and replaced, when the state changes
}

// poolQueue is one queue's share of the pool. Its fields are guarded by pool.mu.
type poolQueue struct {
	index  int
	weight int
	// limit is QueueConfig.Limit.MaxConcurrency, or the pool's capacity.
	limit int

	taken   int     // slots of this queue's receives in flight and its held messages
	polling int     // of taken, by its receives in flight
	polls   int     // this queue's receives in flight (probes included)
	waiting int     // acquire calls of this queue waiting
	idle    bool    // the last receive came back empty (several queues only)
	pass    float64 // stride: messages received / weight, see pool
}

// poolSpec describes one queue of a pool.
type poolSpec struct {
	weight         int // at least 1
	maxConcurrency int // 0: the pool's capacity
}

// newPool returns a pool of capacity slots serving one queue per spec, in order.
func newPool(capacity int, strict bool, specs ...poolSpec) *pool {
	p := &pool{capacity: capacity, strict: strict, changed: make(chan struct{})}
	for i, spec := range specs {
		limit := spec.maxConcurrency
		if limit <= 0 || limit > capacity {
			limit = capacity
		}
		p.queues = append(p.queues, &poolQueue{
			index:  i,
			weight: max(spec.weight, 1),
			limit:  limit,
			idle:   len(specs) > 1 && !strict,
		})
	}
	return p
}

// multi reports whether the pool schedules several queues.
func (p *pool) multi() bool { return len(p.queues) > 1 }

// acquire takes the slots of one receive on q of at most limit messages; the receive
// must end with received. It returns 0 when stop is closed first; probe reports a probe
// of an idle queue (one message). When no other receive is in flight it takes what is
// free as soon as one slot is, so no queue is left unpolled while a slot is free.
// Otherwise it waits until it can take a full batch: limit slots, or all that the
// receives in flight leave, if fewer. So further receives add full batches, not
// fragments: handlers that finish together free their slots a few microseconds apart,
// and receives grabbing the first one or two would multiply the calls per message.
//
// With Config.ReceiveGather, a receive that could go with fewer than a full batch waits
// that long (from when it first could go) for more slots to free, so slow handlers
// finishing one by one do not make one call per message.
func (p *pool) acquire(q *poolQueue, stop <-chan struct{}, limit int) (taken int, probe bool) {
	p.mu.Lock()
	q.waiting++
	var couldSince time.Time // when this receive first could have gone with a partial batch
	for {
		var timer *time.Timer
		var gathering <-chan time.Time
		if taken, probe := p.grant(q, limit); taken > 0 {
			wait := time.Duration(0)
			if !probe && p.gather > 0 && taken < p.fullBatch(q, limit) {
				now := time.Now()
				if couldSince.IsZero() {
					couldSince = now
				}
				wait = p.gather - now.Sub(couldSince)
			}
			if wait <= 0 {
				q.waiting--
				p.take(q, taken, probe)
				p.mu.Unlock()
				return taken, probe
			}
			timer = time.NewTimer(wait)
			gathering = timer.C
		}
		changed := p.changed
		p.waiters++
		p.mu.Unlock()
		select {
		case <-changed:
		case <-gathering:
		case <-stop:
			if timer != nil {
				timer.Stop()
			}
			p.mu.Lock()
			p.waiters--
			q.waiting--
			p.broadcast() // another queue may be the one to go now
			p.mu.Unlock()
			return 0, false
		}
		if timer != nil {
			timer.Stop()
		}
		p.mu.Lock()
		p.waiters--
	}
}

// take records a receive on q granted taken slots. p.mu must be held.
func (p *pool) take(q *poolQueue, taken int, probe bool) {
	p.taken += taken
	p.polling += taken
	q.taken += taken
	q.polling += taken
	q.polls++
	if !probe {
		p.polls++
		q.pass += float64(taken) / float64(q.weight)
	}
}

// grant is how many slots a receive on q may take now (0: wait), and whether it is a
// probe. p.mu must be held.
func (p *pool) grant(q *poolQueue, limit int) (int, bool) {
	free := p.capacity - p.taken
	room := q.limit - q.taken
	if free < 1 || room < 1 || !p.allowed(q) {
		return 0, false
	}
	if q.idle {
		if q.polls > 0 {
			return 0, false // an idle queue keeps one receive in flight
		}
		return 1, true
	}
	want := p.want(q, limit)
	if free < want {
		return 0, false
	}
	if !p.strict && p.multi() {
		for _, other := range p.queues {
			if other != q && other.waiting > 0 && !other.idle && p.ready(other, limit) && other.before(q) {
				return 0, false // freed slots go to the lower pass first
			}
		}
	}
	return min(free, limit, room), false
}

// want is the fewest slots a receive on busy queue q waits for (see acquire). p.mu must
// be held.
func (p *pool) want(q *poolQueue, limit int) int {
	if p.polls == 0 {
		if p.prefetch > 0 {
			// The held messages run while this receive waits for a batch.
			return max(min(p.prefetch, p.fullBatch(q, limit)), 1)
		}
		return 1
	}
	return max(min(limit, p.capacity-p.polling, q.limit-q.polling), 1)
}

// fullBatch is the most slots a receive on q could ask for if every slot the receives
// in flight leave were free. p.mu must be held.
func (p *pool) fullBatch(q *poolQueue, limit int) int {
	return min(limit, p.capacity-p.polling, q.limit-q.polling)
}

// ready reports whether a waiting receive on busy queue q could take slots now. p.mu
// must be held.
func (p *pool) ready(q *poolQueue, limit int) bool {
	return q.limit-q.taken >= 1 && p.capacity-p.taken >= p.want(q, limit)
}

// allowed applies strict priority: a queue is polled only while every queue of higher
// weight is idle. p.mu must be held.
func (p *pool) allowed(q *poolQueue) bool {
	if !p.strict {
		return true
	}
	for _, other := range p.queues {
		if other.weight > q.weight && !other.idle {
			return false
		}
	}
	return true
}

// before reports whether q goes before other under weighted priority: lower pass,
// then configuration order.
func (q *poolQueue) before(other *poolQueue) bool {
	if q.pass != other.pass {
		return q.pass < other.pass
	}
	return q.index < other.index
}

// received ends a receive on q that took asked slots and got got messages (answered is
// false for a failed call): their slots are now held by the messages, the rest are
// free. With several queues it updates q's idle state: an empty answer makes it idle; a
// message makes an idle queue busy again, at the lowest pass of the busy queues.
func (p *pool) received(q *poolQueue, asked, got int, probe, answered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q.polls--
	p.polling -= asked
	q.polling -= asked
	p.taken -= asked - got
	q.taken -= asked - got
	if probe {
		if got > 0 && p.multi() {
			q.idle = false
			if lowest, ok := p.lowestBusyPass(q); ok && lowest > q.pass {
				q.pass = lowest
			}
			q.pass += float64(got) / float64(q.weight)
		}
	} else {
		p.polls--
		q.pass -= float64(asked-got) / float64(q.weight)
		if got == 0 && answered && p.multi() {
			q.idle = true
		}
	}
	p.broadcast()
}

// lowestBusyPass is the lowest pass of the busy queues other than q. p.mu must be held.
func (p *pool) lowestBusyPass(q *poolQueue) (float64, bool) {
	var lowest float64
	found := false
	for _, other := range p.queues {
		if other != q && !other.idle && (!found || other.pass < lowest) {
			lowest, found = other.pass, true
		}
	}
	return lowest, found
}

// release gives back the slots of count settled messages of q.
func (p *pool) release(q *poolQueue, count int) {
	if count == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.taken -= count
	q.taken -= count
	p.broadcast()
}

// broadcast wakes the waiting acquire calls. p.mu must be held.
func (p *pool) broadcast() {
	if p.waiters > 0 {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}
