package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// ErrHandlerTimeout is the cause (context.Cause) of a handler context cancelled because
// the handler ran longer than Config.HandlerTimeout.
var ErrHandlerTimeout = errors.New("poller: handler timeout exceeded")

// ErrDrainTimeout is the cause (context.Cause) of a handler context cancelled because a
// shutdown's drain deadline (Config.DrainTimeout) passed while the handler was running.
// The message is then released (visibility 0) for another worker. It matches
// [sqsworker.ErrInterrupted]: the idempotency middleware records the receive as
// interrupted, so it is no attempt of the job ([sqsworker.Message.Attempt]).
var ErrDrainTimeout = fmt.Errorf("poller: drain deadline reached during shutdown (%w)", sqsworker.ErrInterrupted)

// cancelGrace is how long a handler whose context was cancelled (hard timeout or drain
// deadline) gets to return before its message is settled without it, so that cleanup
// in the handler (for example releasing an idempotency lease) comes before the message
// is handed to another worker.
const cancelGrace = time.Second

// dispatcher runs handlers: one goroutine per message on standard queues, one per
// message group on FIFO queues (see fifo.go), each holding the message's slot and, while
// its handler runs, one of Config.Concurrency turns (see turns.go).
type dispatcher struct {
	handlerTimeout time.Duration
	pool           *pool
	logger         *slog.Logger

	// handlerContext is the parent of every handler context; abort cancels it with
	// cause ErrDrainTimeout.
	handlerContext context.Context
	abortHandlers  context.CancelCauseFunc
	// abandon is closed at abort: the drain stops waiting for abandoned handlers.
	abandon chan struct{}
	// abandonedReturned gets a token (never blocking) each time an abandoned handler
	// returns, so the drain's wait sees the last one go.
	abandonedReturned chan struct{}

	// maxAbandoned is Config.MaxAbandonedHandlers: how many abandoned handlers may run
	// on without a concurrency slot.
	maxAbandoned int
	stats        *counters

	// stopped is closed by stop: messages waiting for their limits (Limit) are released.
	stopped chan struct{}

	mu       sync.Mutex
	stopping bool
	groups   map[string]*group
	// turns bounds the running handlers to Config.Concurrency; messages prefetched
	// beyond it (Config.Prefetch) wait there in receive order. Guarded by mu.
	turns turns
	// abandonedFree counts the abandoned handlers running without a slot (at most
	// maxAbandoned), abandonedHolding those that keep theirs: holding maps each of
	// these to its lane, whose slot abort gives back. abandonedCount is every abandoned
	// handler still running, after abort too. Guarded by mu.
	abandonedFree, abandonedHolding int
	holding                         map[*abandonedHandler]*lane
	abandonedCount                  int

	wg sync.WaitGroup
}

type dispatcherParams struct {
	handlerTimeout time.Duration
	concurrency    int // Config.Concurrency: handlers running at once
	pool           *pool
	logger         *slog.Logger
	baseContext    context.Context
	maxAbandoned   int
	stats          *counters
}

func newDispatcher(params dispatcherParams) *dispatcher {
	handlerContext, abort := context.WithCancelCause(params.baseContext)
	return &dispatcher{
		handlerTimeout:    params.handlerTimeout,
		pool:              params.pool,
		logger:            params.logger,
		handlerContext:    handlerContext,
		abortHandlers:     abort,
		abandon:           make(chan struct{}),
		stopped:           make(chan struct{}),
		groups:            make(map[string]*group),
		holding:           make(map[*abandonedHandler]*lane),
		abandonedReturned: make(chan struct{}, 1),
		turns:             turns{capacity: max(params.concurrency, 1)},
		maxAbandoned:      params.maxAbandoned,
		stats:             params.stats,
	}
}

// dispatch starts handling received messages. Once the dispatcher is stopping they are
// released instead, unhandled.
func (d *dispatcher) dispatch(deliveries []*delivery) {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		d.releaseUnstarted(deliveries, "shutting down")
		return
	}
	defer d.mu.Unlock()
	for _, held := range deliveries {
		if held.lane.fifo {
			d.enqueueGroup(held)
			continue
		}
		turn := d.turns.ask(held) // in receive order
		d.wg.Go(func() {
			<-turn.ready
			if !turn.granted {
				return // released by stop, unstarted
			}
			_, abandoned := d.process(held, nil)
			d.releaseSlot(held.lane, abandoned)
		})
	}
}

// releaseUnstarted releases messages no handler has seen, and their slots.
func (d *dispatcher) releaseUnstarted(deliveries []*delivery, why string) {
	if len(deliveries) == 0 {
		return
	}
	for lane, held := range byLane(deliveries) {
		for _, d := range held {
			lane.tokenSettled(d)
		}
		lane.settler.release(held, why)
		d.pool.release(lane.slots, len(held))
	}
}

// stop begins the drain: nothing new starts, and messages received but not started (a
// FIFO group's later messages, messages waiting for a turn under Config.Prefetch) are
// released at once. Running handlers go on.
func (d *dispatcher) stop() {
	d.mu.Lock()
	d.stopping = true
	close(d.stopped)
	unstarted := append(d.turns.cancel(), d.takeQueued()...)
	d.mu.Unlock()
	d.releaseUnstarted(unstarted, "shutting down")
}

// wait returns a channel closed when every handler goroutine has finished, and every
// abandoned handler has returned or abort has given up on them.
func (d *dispatcher) wait() <-chan struct{} {
	done := make(chan struct{})
	go func() { // ends with the last handler, or at abort
		defer close(done)
		d.wg.Wait()
		for {
			d.mu.Lock()
			running := d.abandonedCount
			d.mu.Unlock()
			if running == 0 {
				return
			}
			select {
			case <-d.abandonedReturned:
			case <-d.abandon:
				return
			}
		}
	}()
	return done
}

// abort ends the drain: running handlers' contexts are cancelled with cause
// ErrDrainTimeout; each gets cancelGrace to return, then its message is released.
// Abandoned handlers that kept their slot give it back now; nothing waits for them any
// more.
func (d *dispatcher) abort() {
	d.abortHandlers(ErrDrainTimeout)
	d.mu.Lock()
	close(d.abandon)
	held := d.holding
	d.holding = make(map[*abandonedHandler]*lane)
	d.abandonedHolding -= len(held)
	d.mu.Unlock()
	for _, lane := range held {
		d.endTurn()
		d.pool.release(lane.slots, 1)
	}
}

// endTurn ends a handler's turn (see turns), starting the next waiting message.
func (d *dispatcher) endTurn() {
	d.mu.Lock()
	d.turns.done()
	d.mu.Unlock()
}

// process runs the handler for one message under its hard timeout and settles the
// message. It reports whether the message is done with, so a FIFO group may go on.
// beforeSettle, if not nil, is called once the handler's result is known, just before
// the message is settled (and so may become visible again). abandoned is not nil when
// the handler ignored its cancelled context and still runs: pass it to releaseSlot,
// which gives back the message's slot.
func (d *dispatcher) process(held *delivery, beforeSettle func()) (done bool, abandoned *abandonedHandler) {
	message := held.message
	limits, err := held.lane.enter(d.handlerContext, d.stopped, held)
	if err != nil {
		held.lane.settler.release([]*delivery{held}, "shutting down while waiting for its rate or concurrency limit")
		return false, nil
	}
	defer limits.leave()
	ctx, cancel := context.WithTimeoutCause(d.handlerContext, d.handlerTimeout, ErrHandlerTimeout)
	defer cancel()
	call := &runningCall{result: make(chan error, 1)}
	held.lane.settler.started(held)
	go func() { // owned by process: it waits for the result, or abandons the call
		limits.take()
		call.returned(settle.Call(ctx, held.lane.handler, message))
	}()

	returned := true
	select {
	case err = <-call.result:
	case <-ctx.Done():
		// Stop the heartbeat now, then give the handler a moment to clean up.
		held.lane.settler.extender.remove(held.lease)
		grace := time.NewTimer(cancelGrace)
		select {
		case err = <-call.result:
		case <-grace.C:
			returned = false
		}
		grace.Stop()
	}

	if beforeSettle != nil {
		beforeSettle()
	}
	aborted := errors.Is(context.Cause(ctx), ErrDrainTimeout)
	switch {
	case aborted && (err != nil || !returned):
		if !returned {
			held.lane.settler.abandoned(held, "drain deadline reached")
		}
		held.lane.settler.release([]*delivery{held}, "drain deadline reached")
	case !returned:
		err = fmt.Errorf("%w: handler still running %s after its context was cancelled (Config.HandlerTimeout %s)", context.Cause(ctx), cancelGrace, d.handlerTimeout)
		held.lane.settler.abandoned(held, "hard timeout (Config.HandlerTimeout)")
		done = held.lane.settler.settle(held, err, held.lane.fifo)
	default:
		done = held.lane.settler.settle(held, err, held.lane.fifo)
	}
	if returned {
		return done, nil
	}
	return done, &abandonedHandler{message: message, since: time.Now(), call: call}
}
