package poller

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// heartbeatRetryDelay is how soon a heartbeat is retried after the whole
// ChangeMessageVisibilityBatch call failed (network error, throttling), plus up to half
// of it again at random.
const heartbeatRetryDelay = time.Second

// lease is one held message's heartbeat state.
type lease struct {
	delivery *delivery

	// mu is held by the extender for the whole of a heartbeat call that includes this
	// lease, so remove waits for such a call: a heartbeat can never land after the
	// message was rescheduled or released.
	mu sync.Mutex
	// visibleUntil is when the message becomes visible again unless extended. Guarded by mu.
	visibleUntil time.Time
	// stopped is set by remove or after a failed heartbeat. Guarded by mu.
	stopped bool

	// nextDue is when the next heartbeat is due; only the extender's goroutine uses it
	// after add.
	nextDue time.Time
}

// extender keeps held messages invisible while they wait for or run in a handler: every
// HeartbeatInterval it sets their visibility to VisibilityExtension with
// ChangeMessageVisibilityBatch (the equivalent of asynq's heartbeater). A per-message
// failure (for example a receipt handle made invalid by the handler deleting the
// message itself) is logged once and ends that message's heartbeats; it never stops
// the process.
type extender struct {
	api       API
	queueURL  string
	interval  time.Duration
	extension time.Duration
	// initial is the visibility a receive gives (Config.ReceiveVisibility).
	initial           time.Duration
	logger            *slog.Logger
	settle            *settle.Settler
	callContext       context.Context
	callErrorsLimiter logLimiter

	mu     sync.Mutex
	leases map[*lease]struct{}

	stop chan struct{}
	done chan struct{}
}

type extenderParams struct {
	api         API
	queue       *sqsinfo.Queue
	interval    time.Duration
	extension   time.Duration
	initial     time.Duration
	logger      *slog.Logger
	settle      *settle.Settler
	callContext context.Context
}

func newExtender(params extenderParams) *extender {
	return &extender{
		api:               params.api,
		queueURL:          params.queue.URL,
		interval:          params.interval,
		extension:         params.extension,
		initial:           params.initial,
		logger:            params.logger,
		settle:            params.settle,
		callContext:       params.callContext,
		callErrorsLimiter: logLimiter{interval: 10 * time.Second},
		leases:            make(map[*lease]struct{}),
		stop:              make(chan struct{}),
		done:              make(chan struct{}),
	}
}

// add starts heartbeats for a just received message. The first one is due after
// HeartbeatInterval or half the receive's visibility (Config.ReceiveVisibility),
// whichever is sooner.
func (e *extender) add(d *delivery) {
	l := &lease{
		delivery:     d,
		visibleUntil: d.receivedAt.Add(e.initial),
		nextDue:      d.receivedAt.Add(min(e.interval, e.initial/2)),
	}
	d.lease = l
	e.mu.Lock()
	e.leases[l] = struct{}{}
	e.mu.Unlock()
}

// remove stops the heartbeats of l, waiting for a heartbeat call in flight for it, and
// returns when the message becomes visible again unless something else changes it.
// Calling it again is harmless.
func (e *extender) remove(l *lease) time.Time {
	l.mu.Lock()
	l.stopped = true
	visibleUntil := l.visibleUntil
	l.mu.Unlock()
	e.mu.Lock()
	delete(e.leases, l)
	e.mu.Unlock()
	return visibleUntil
}

// start runs the heartbeat loop until shutdown.
func (e *extender) start(wg *sync.WaitGroup) {
	wg.Go(func() {
		defer close(e.done)
		// Fine enough that the first heartbeat, due at half the receive's visibility,
		// is not late by more than a sixth of it.
		period := min(e.interval/4, time.Second)
		if e.initial > 0 {
			period = min(period, e.initial/6)
		}
		tick := time.NewTicker(max(period, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-e.stop:
				return
			case now := <-tick.C:
				e.beat(now)
			}
		}
	})
}

// shutdown stops the loop; held messages are no longer extended. Call it after the
// dispatcher has settled every message.
func (e *extender) shutdown() {
	close(e.stop)
	<-e.done
}

// beat extends every lease that is due, ten per call.
func (e *extender) beat(now time.Time) {
	var due []*lease
	e.mu.Lock()
	for l := range e.leases {
		if !l.nextDue.After(now) {
			due = append(due, l)
		}
	}
	e.mu.Unlock()
	for _, batch := range sqsx.Chunk(due, 0, nil, 0) {
		e.extend(batch)
	}
}

// extend sends one ChangeMessageVisibilityBatch for batch, holding each lease's lock
// for the duration of the call.
func (e *extender) extend(batch []*lease) {
	now := time.Now()
	var sent []*lease
	var changes []sqsx.VisibilityChange
	defer func() {
		for _, l := range sent {
			l.mu.Unlock()
		}
	}()
	for _, l := range batch {
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			continue
		}
		// Never ask for more than SQS allows: 12 h from the receive.
		extension := sqsx.ClampVisibility(e.extension, now.Sub(l.delivery.receivedAt))
		if extension <= e.interval {
			l.stopped = true
			l.mu.Unlock()
			messageLogger(e.logger, l.delivery.message).Warn("poller: heartbeat stopped: the message is close to SQS's 12h visibility limit")
			continue
		}
		sent = append(sent, l)
		changes = append(changes, sqsx.VisibilityChange{ReceiptHandle: l.delivery.message.ReceiptHandle, Timeout: extension})
	}
	if len(changes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.callContext, max(e.interval, time.Second))
	defer cancel()
	results := sqsx.ChangeVisibility(ctx, e.api, e.queueURL, changes, withoutRetryQuota)
	if callErr, ok := errors.AsType[*sqsx.CallError](results[0].Err); ok {
		e.callFailed(sent, now, callErr.Err)
		return
	}
	for i, result := range results {
		l := sent[i]
		if result.Err == nil {
			extended := time.Duration(sqsx.VisibilitySeconds(changes[i].Timeout)) * time.Second
			l.visibleUntil = now.Add(extended)
			l.nextDue = now.Add(e.interval)
			e.settle.HeartbeatExtended(e.callContext, l.delivery.heldDelivery(), extended)
			continue
		}
		l.stopped = true
		entry, _ := errors.AsType[*sqsx.EntryError](result.Err)
		messageLogger(e.logger, l.delivery.message).Warn("poller: heartbeat failed; no further heartbeats for this message",
			"code", entry.Code, "sender_fault", entry.SenderFault, "error", entry.Message)
		e.settle.HeartbeatFailed(e.callContext, l.delivery.heldDelivery(), result.Err)
	}
}

// callFailed handles an error of the whole call: each lease is retried soon, unless its
// visibility has already run out, which ends its heartbeats (logged once).
func (e *extender) callFailed(leases []*lease, now time.Time, err error) {
	if ok, suppressed := e.callErrorsLimiter.allow(now); ok {
		e.logger.Warn("poller: heartbeat call failed; retrying", "error", err, "suppressed", suppressed)
	}
	for _, l := range leases {
		if l.stopped {
			continue
		}
		if now.After(l.visibleUntil) {
			l.stopped = true
			messageLogger(e.logger, l.delivery.message).Warn("poller: heartbeat failed until the visibility ran out; no further heartbeats for this message", "error", err)
			e.settle.HeartbeatFailed(e.callContext, l.delivery.heldDelivery(), err)
			continue
		}
		l.nextDue = now.Add(heartbeatRetryDelay + rand.N(heartbeatRetryDelay/2))
	}
}
