package poller

import (
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
)

// Abandoned handlers: handlers still running after their context was cancelled and the
// grace passed. Their messages are settled without them; each costs its own goroutine
// only, and, beyond Config.MaxAbandonedHandlers, the slot it keeps until it returns.

// abandonedHandler is a handler that still runs after its context was cancelled and
// the grace passed; its message is already settled.
type abandonedHandler struct {
	message *sqsworker.Message
	since   time.Time
	call    *runningCall
}

// runningCall is one handler call running on its own goroutine: its result goes to
// result, unless the call was abandoned first, when the goroutine itself runs the
// abandonment's onReturn as it returns. So an abandoned handler costs its own goroutine
// only: nothing of the poller's waits beside it.
type runningCall struct {
	result chan error // buffered: the goroutine never blocks on it

	mu       sync.Mutex
	done     bool
	onReturn func(error)
}

// returned delivers the handler's result: to onReturn when the call was abandoned, else
// to result. The handler's goroutine calls it last.
func (c *runningCall) returned(err error) {
	c.mu.Lock()
	c.done = true
	onReturn := c.onReturn
	c.mu.Unlock()
	if onReturn != nil {
		onReturn(err)
		return
	}
	c.result <- err
}

// abandon makes onReturn what the handler's goroutine calls when it returns. It reports
// false, registering nothing, when the handler has returned already (its result is in
// result).
func (c *runningCall) abandon(onReturn func(error)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.onReturn = onReturn
	return true
}

// releaseSlot gives back the slot and the turn of a message whose handler finished, or,
// when it was abandoned (still running, ignoring its cancelled context), decides what
// the slot and the turn do until it returns: while fewer than
// Config.MaxAbandonedHandlers abandoned handlers run without a slot, this one's slot
// and turn are given back at once so receiving goes on; otherwise it keeps both until
// it returns (or abort gives them back). It returns at once either way: the abandoned
// handler's own goroutine settles the accounts when it returns (abandonedReturn).
func (d *dispatcher) releaseSlot(lane *lane, abandoned *abandonedHandler) {
	if abandoned == nil {
		d.endTurn()
		d.pool.release(lane.slots, 1)
		return
	}
	d.stats.abandonedRunning.Add(1)
	d.mu.Lock()
	free := d.abandonedFree < d.maxAbandoned
	if free {
		d.abandonedFree++
	} else {
		d.abandonedHolding++
		d.holding[abandoned] = lane
	}
	d.abandonedCount++
	holding := d.abandonedHolding
	d.mu.Unlock()
	logger := messageLogger(d.logger, abandoned.message)
	if free {
		d.endTurn()
		d.pool.release(lane.slots, 1)
		logger.Warn("poller: handler ignores its cancelled context; abandoned, running on without its concurrency slot (Config.MaxAbandonedHandlers)",
			"max_abandoned_handlers", d.maxAbandoned)
	} else {
		logger.Error("poller: handler ignores its cancelled context; abandoned, and Config.MaxAbandonedHandlers are already running, so its concurrency slot stays taken until it returns",
			"max_abandoned_handlers", d.maxAbandoned, "slots_held_by_abandoned_handlers", holding, "concurrency", d.turns.capacity)
	}
	onReturn := func(err error) { d.abandonedReturn(lane, abandoned, free, err) }
	if !abandoned.call.abandon(onReturn) {
		onReturn(<-abandoned.call.result) // it returned meanwhile
	}
}

// abandonedReturn settles the accounts of an abandoned handler that returned: logged,
// no longer counted, and its slot and turn given back if it still held them.
func (d *dispatcher) abandonedReturn(lane *lane, abandoned *abandonedHandler, free bool, err error) {
	messageLogger(d.logger, abandoned.message).Warn("poller: abandoned handler returned", "after", time.Since(abandoned.since), "error", err)
	d.stats.abandonedRunning.Add(-1)
	d.mu.Lock()
	held := false
	if free {
		d.abandonedFree--
	} else if _, held = d.holding[abandoned]; held {
		delete(d.holding, abandoned)
		d.abandonedHolding--
	}
	d.abandonedCount--
	d.mu.Unlock()
	select {
	case d.abandonedReturned <- struct{}{}:
	default:
	}
	if held {
		d.endTurn()
		d.pool.release(lane.slots, 1)
	}
}

// starved reports whether abandoned handlers hold every concurrency slot, so the server
// cannot receive (for the health endpoint), and how many they hold.
func (d *dispatcher) starved() (bool, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.abandonedHolding >= d.turns.capacity, d.abandonedHolding
}
