package poller

import (
	"sync"
	"time"
)

// pool is the counting semaphore behind Config.Concurrency, shared by every queue of a
// server, and the scheduler that decides which queue's receive gets freed slots
// (Config.Priority, QueueConfig.Weight, MinSlots, MaxSlots and MaxWait). A receive
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
//   - Strict: a queue's receive starts only while every queue of higher weight is idle,
//     unless the queue has aged: it has waited MaxWait for the higher queues, so it
//     takes the next freed slots before them (aging, once per wait).
//   - MinSlots: reserve is a queue's reservation. Slots a queue's reservation leaves
//     unused are free for that queue only; the others see them as taken. Within its
//     reservation a queue is polled whatever the priority and the passes say.
//   - MaxSlots: limit is the most slots a queue holds (receives in flight and messages).
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
	// now is the clock of strict priority's aging (time.Now; tests replace it).
	now func() time.Time
	// aging, if set, is told when a receive granted because its queue aged brought
	// messages (the queue's index, its MaxWait, how long it waited), outside p.mu: the
	// server logs it. An aged receive that comes back empty is not reported.
	aging func(index int, maxWait, waited time.Duration)

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
	// limit is QueueConfig.MaxSlots, or the pool's capacity.
	limit int
	// reserve is QueueConfig.MinSlots: slots no other queue may take.
	reserve int
	// maxWait is QueueConfig.MaxWait: under strict priority, how long a waiting
	// receive of this queue yields to higher queues before it ages (0: never).
	maxWait time.Duration
	// blockedSince is when a waiting receive of this queue was first refused for a
	// higher queue's sake (strict priority), zero while it is not.
	blockedSince time.Time
	// agedReceive is set while a receive granted by aging is in flight, agedWaited
	// how long the queue had waited: received reports the aging when it brings messages.
	agedReceive bool
	agedWaited  time.Duration

	taken   int     // slots of this queue's receives in flight and its held messages
	polling int     // of taken, by its receives in flight
	polls   int     // this queue's receives in flight (probes included)
	waiting int     // acquire calls of this queue waiting
	idle    bool    // the last receive came back empty (several queues only)
	pass    float64 // stride: messages received / weight, see pool
}

// poolSpec describes one queue of a pool.
type poolSpec struct {
	weight   int           // at least 1
	maxSlots int           // 0: the pool's capacity
	minSlots int           // reserved for this queue; the sum is at most the capacity
	maxWait  time.Duration // strict priority's aging bound; 0: none
}

// newPool returns a pool of capacity slots serving one queue per spec, in order.
func newPool(capacity int, strict bool, specs ...poolSpec) *pool {
	p := &pool{capacity: capacity, strict: strict, changed: make(chan struct{}), now: time.Now}
	for i, spec := range specs {
		limit := spec.maxSlots
		if limit <= 0 || limit > capacity {
			limit = capacity
		}
		p.queues = append(p.queues, &poolQueue{
			index:   i,
			weight:  max(spec.weight, 1),
			limit:   limit,
			reserve: min(max(spec.minSlots, 0), limit),
			maxWait: spec.maxWait,
			idle:    len(specs) > 1 && !strict,
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
// Slots of q's own reservation (MinSlots) are taken at once, never waited on for a
// batch, and so is the first slot of an aged queue (strict priority's MaxWait).
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
		var wake <-chan time.Time
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
				if now := p.now(); p.aged(q, now) {
					q.agedReceive, q.agedWaited = true, now.Sub(q.blockedSince)
				}
				q.waiting--
				p.take(q, taken, probe)
				p.mu.Unlock()
				return taken, probe
			}
			timer = time.NewTimer(wait)
			wake = timer.C
		} else if at := p.agesAt(q); !at.IsZero() {
			timer = time.NewTimer(max(at.Sub(p.now()), 0))
			wake = timer.C
		}
		changed := p.changed
		p.waiters++
		p.mu.Unlock()
		select {
		case <-changed:
		case <-wake:
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
	q.blockedSince = time.Time{} // served: a new wait for priority starts afresh
	if !probe {
		p.polls++
		q.pass += float64(taken) / float64(q.weight)
	}
}

// grant is how many slots a receive on q may take now (0: wait), and whether it is a
// probe. p.mu must be held.
func (p *pool) grant(q *poolQueue, limit int) (int, bool) {
	room := q.limit - q.taken
	own, shared := p.ownFree(q), p.sharedFree()
	if !p.ranked(q, p.now()) {
		shared = 0 // a higher queue, or an aged one, goes first; the reservation stays q's
	}
	if room < 1 || own+shared < 1 {
		return 0, false
	}
	if q.idle {
		if q.polls > 0 {
			return 0, false // an idle queue keeps one receive in flight
		}
		return 1, true
	}
	if !p.strict && p.multi() && shared > 0 {
		for _, other := range p.queues {
			if other != q && other.waiting > 0 && !other.idle && p.readyShared(other, limit) && other.before(q) {
				shared = 0 // freed slots go to the lower pass first
				break
			}
		}
	}
	want := p.want(q, limit)
	if p.aged(q, p.now()) {
		want = 1
	}
	free := own + shared
	switch {
	case free >= want && free >= 1:
	case own >= 1:
		free = own // a reservation serves at once, never waiting for a batch
	default:
		return 0, false
	}
	return min(free, limit, room), false
}

// ownFree is how many slots of q's reservation (MinSlots) q does not hold: free for q
// only. p.mu must be held.
func (p *pool) ownFree(q *poolQueue) int { return max(q.reserve-q.taken, 0) }

// sharedFree is how many free slots no queue's reservation keeps: free for every queue.
// p.mu must be held.
func (p *pool) sharedFree() int {
	free := p.capacity - p.taken
	for _, q := range p.queues {
		free -= p.ownFree(q)
	}
	return max(free, 0)
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
	return max(p.fullBatch(q, limit), 1)
}

// fullBatch is the most slots a receive on q could ask for if every slot the receives
// in flight leave were free: less the slots of the other queues' receives in flight and
// of their reservations, which q never gets. p.mu must be held.
func (p *pool) fullBatch(q *poolQueue, limit int) int {
	reachable := p.capacity - q.polling
	for _, other := range p.queues {
		if other != q {
			reachable -= max(other.reserve, other.polling)
		}
	}
	return min(limit, reachable, q.limit-q.polling)
}

// readyShared reports whether a waiting receive on busy queue q could take shared
// slots now (those no reservation keeps). p.mu must be held.
func (p *pool) readyShared(q *poolQueue, limit int) bool {
	return q.limit-q.taken >= 1 && p.sharedFree() >= 1 && p.ownFree(q)+p.sharedFree() >= p.want(q, limit)
}

// ranked applies strict priority: whether q may take shared slots now. It may when
// every queue of higher weight is idle, or when q has aged (see aged), and no other
// queue has aged before it: an aged queue goes before every other. While a higher
// queue holds q back, q.blockedSince keeps when that began. p.mu must be held.
func (p *pool) ranked(q *poolQueue, now time.Time) bool {
	if !p.strict {
		return true
	}
	qAged := p.aged(q, now)
	for _, other := range p.queues {
		if other != q && p.aged(other, now) && (!qAged || other.blockedSince.Before(q.blockedSince) ||
			other.blockedSince.Equal(q.blockedSince) && other.index < q.index) {
			return false
		}
	}
	if qAged {
		return true
	}
	for _, other := range p.queues {
		if other.weight > q.weight && !other.idle {
			if q.blockedSince.IsZero() && q.waiting > 0 {
				q.blockedSince = now
			}
			return false
		}
	}
	q.blockedSince = time.Time{}
	return true
}

// aged reports whether q, held back by strict priority, has waited its MaxWait with a
// receive still waiting. p.mu must be held.
func (p *pool) aged(q *poolQueue, now time.Time) bool {
	return p.strict && q.maxWait > 0 && q.waiting > 0 && !q.blockedSince.IsZero() && now.Sub(q.blockedSince) >= q.maxWait
}

// agesAt is when q, held back by strict priority, will age; zero if it never will.
// p.mu must be held.
func (p *pool) agesAt(q *poolQueue) time.Time {
	if !p.strict || q.maxWait <= 0 || q.blockedSince.IsZero() {
		return time.Time{}
	}
	return q.blockedSince.Add(q.maxWait)
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
// free; an aged receive's messages are reported to aging. With several queues it updates q's idle state: an empty answer makes it idle; a
// message makes an idle queue busy again, at the lowest pass of the busy queues.
func (p *pool) received(q *poolQueue, asked, got int, probe, answered bool) {
	p.mu.Lock()
	if q.agedReceive {
		q.agedReceive = false
		if got > 0 && p.aging != nil {
			defer p.aging(q.index, q.maxWait, q.agedWaited) // after the unlock below
		}
	}
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

// slots returns each queue's share of the slots now, in order (see QueueSlots); urls
// names the queues.
func (p *pool) slots(urls []string) []QueueSlots {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]QueueSlots, len(p.queues))
	for i, q := range p.queues {
		out[i] = QueueSlots{QueueURL: urls[i], Busy: q.taken - q.polling, Receiving: q.polling, MinSlots: q.reserve, MaxSlots: q.limit}
	}
	return out
}

// broadcast wakes the waiting acquire calls. p.mu must be held.
func (p *pool) broadcast() {
	if p.waiters > 0 {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}
