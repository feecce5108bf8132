package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

const (
	// deleteCallTimeout bounds one DeleteMessageBatch call.
	deleteCallTimeout = 10 * time.Second
	// receiptSafetyMargin: a delete is retried only while the receipt handle still has
	// this much visibility left; later, the message may already be with another worker.
	receiptSafetyMargin = time.Second
	// finalFlushTimeout bounds the last flush at shutdown, so DrainTimeout's default
	// (25 s), the cancellation grace (1 s) and this still fit ECS's 30 s stopTimeout.
	finalFlushTimeout = 3 * time.Second
	// minDeletesInFlight is the least number of DeleteMessageBatch calls the acker keeps
	// in flight: with ~10 ms round trips (SQS in-region), one call at a time would cap a
	// worker near 1,000 deletes per second.
	minDeletesInFlight = 4
)

// deletesInFlight is how many DeleteMessageBatch calls the acker of a server with
// concurrency slots keeps in flight at most: one per 10 slots (a full batch each), at
// least minDeletesInFlight.
func deletesInFlight(concurrency int) int {
	return max(minDeletesInFlight, (concurrency+sqsinfo.MaxBatchEntries-1)/sqsinfo.MaxBatchEntries)
}

// pendingDelete is one message waiting for, or retrying, its delete.
type pendingDelete struct {
	delivery *delivery
	// expires is when the receipt handle stops being usable (the message's visibility
	// ends); the delete is not retried after it.
	expires time.Time
	// queued is when the delete was added (or queued again for a retry): the batch it
	// joins is sent at most DeleteFlushInterval later.
	queued time.Time
	// notBefore delays a retry.
	notBefore time.Time
	attempts  int
	// code and text are the last failure's SQS error code and message, for the log of
	// a delete given up on.
	code, text string
}

// acker deletes settled messages in batches (the equivalent of asynq's syncer): a full
// batch of 10 is sent as soon as it is ready, a partial one DeleteFlushInterval after
// its oldest delete was queued. Up to maxInFlight DeleteMessageBatch calls run at once
// (each on a goroutine the acker owns and waits for); when all are busy, deletes keep
// queuing and fill the next batches. It reads every entry of the response: failed
// entries that are not the sender's fault are retried, alone, with the same receipt
// handle, while it is still valid; sender faults are logged as errors with their code
// and not retried. A message counts as deleted only once SQS confirmed it.
type acker struct {
	api         API
	queueURL    string
	interval    time.Duration
	logger      *slog.Logger
	settle      *settle.Settler
	callContext context.Context

	// inFlight holds one token per DeleteMessageBatch call running (at most its
	// capacity, maxInFlight); calls is their goroutines. Only the flush loop's goroutine
	// starts calls, so calls.Wait there never races calls.Add.
	inFlight chan struct{}
	calls    sync.WaitGroup

	mu      sync.Mutex
	pending []*pendingDelete
	// sending counts deletes taken from pending whose DeleteMessageBatch has not
	// answered yet, so waiting reports them too.
	sending int
	// confirmed and unconfirmed count the deletes SQS confirmed and those given up on,
	// for the final flush's log line; flushFrom is when the shutdown's flush began
	// (flushNow or shutdown, whichever came first) and the counts then.
	confirmed, unconfirmed         int
	flushFrom                      time.Time
	confirmedFrom, unconfirmedFrom int

	wake chan struct{}
	// urgent is closed by flushNow: no more deletes are coming to batch with, so each
	// is sent at once.
	urgent     chan struct{}
	urgentOnce sync.Once
	stop       chan struct{}
	done       chan struct{}
}

type ackerParams struct {
	api      API
	queueURL string
	interval time.Duration
	// maxInFlight bounds the DeleteMessageBatch calls running at once (at least 1).
	maxInFlight int
	logger      *slog.Logger
	settle      *settle.Settler
	callContext context.Context
}

func newAcker(params ackerParams) *acker {
	return &acker{
		api:         params.api,
		queueURL:    params.queueURL,
		interval:    params.interval,
		logger:      params.logger,
		settle:      params.settle,
		callContext: params.callContext,
		inFlight:    make(chan struct{}, max(params.maxInFlight, 1)),
		wake:        make(chan struct{}, 1),
		urgent:      make(chan struct{}),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// add queues d's delete; expires is when its receipt handle stops being valid.
func (a *acker) add(d *delivery, expires time.Time) {
	a.mu.Lock()
	a.pending = append(a.pending, &pendingDelete{delivery: d, expires: expires, queued: time.Now()})
	a.mu.Unlock()
	a.signal()
}

func (a *acker) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// start runs the flush loop until shutdown; it returns (a.done closes) once the final
// flush is over and every DeleteMessageBatch call it started has answered.
func (a *acker) start(wg *sync.WaitGroup) {
	wg.Go(func() {
		defer close(a.done)
		defer a.calls.Wait()
		for {
			select {
			case <-a.stop:
				a.finalFlush()
				return
			case <-a.wake:
			}
			all, ok := a.waitForBatch()
			if !ok {
				a.finalFlush()
				return
			}
			a.flush(all)
			if a.hasPending() {
				a.signal()
			}
		}
	})
}

// waitForBatch waits until a full batch of 10 deletes is ready (all false: send full
// batches only) or the oldest ready delete has waited the flush interval, or flushNow
// was called and one is ready (all true: send every ready delete). ok is false when
// shutdown was asked for.
func (a *acker) waitForBatch() (all, ok bool) {
	urgent := a.urgent
	timer := time.NewTimer(a.interval)
	defer timer.Stop()
	for {
		now := time.Now()
		ready, oldest := a.ready(now)
		select {
		case <-urgent:
			urgent = nil
			all = true
		default:
		}
		switch {
		case ready > 0 && (all || !now.Before(oldest.Add(a.interval))):
			return true, true
		case ready >= sqsinfo.MaxBatchEntries:
			return false, true
		}
		if ready > 0 {
			timer.Reset(oldest.Add(a.interval).Sub(now))
		}
		select {
		case <-timer.C:
			if ready == 0 {
				// Nothing was ready: wake again after the interval, for retries.
				return true, true
			}
		case <-urgent:
		case <-a.wake:
		case <-a.stop:
			return false, false
		}
	}
}

// flushNow makes every pending and later delete go out at once instead of waiting
// DeleteFlushInterval for a batch to fill: the shutdown calls it when the last handler
// has finished, so the final deletes do not wait for the long polls still in flight.
func (a *acker) flushNow() {
	a.urgentOnce.Do(func() {
		a.markFlushStart()
		close(a.urgent)
	})
	a.signal()
}

// markFlushStart notes when the shutdown's flush began, and the counts then, once.
func (a *acker) markFlushStart() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.flushFrom.IsZero() {
		a.flushFrom, a.confirmedFrom, a.unconfirmedFrom = time.Now(), a.confirmed, a.unconfirmed
	}
}

// shutdown flushes what is pending (retrying as usual, for at most 3 s) and stops.
// Call it last, after the dispatcher has settled every message. It logs one info line:
// the deletes confirmed and given up on since the shutdown's flush began.
func (a *acker) shutdown() {
	a.markFlushStart()
	close(a.stop)
	<-a.done
	a.mu.Lock()
	deleted, unconfirmed, took := a.confirmed-a.confirmedFrom, a.unconfirmed-a.unconfirmedFrom, time.Since(a.flushFrom)
	a.mu.Unlock()
	// Info either way: each delete given up on has its own error line.
	a.logger.Info("poller: final delete flush", "deleted", deleted, "unconfirmed", unconfirmed, "duration", took)
}

// finalFlush sends every pending delete, retrying failed entries while their receipt
// handles are valid, until nothing is pending or finalFlushTimeout has passed.
func (a *acker) finalFlush() {
	deadline := time.Now().Add(finalFlushTimeout)
	for a.waiting() && time.Now().Before(deadline) {
		a.flush(true)
		// Every call answered, so what failed is back in pending, with its retry time.
		a.calls.Wait()
		if next, ok := a.nextRetry(); ok {
			time.Sleep(min(max(time.Until(next), 0), time.Until(deadline)))
		}
	}
	a.mu.Lock()
	left := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, p := range left {
		code, text := p.code, p.text
		if code == "" && text == "" {
			text = "the final flush ended before the delete was sent"
		}
		a.giveUp(p, "poller: delete not confirmed before shutdown; the message will be delivered again", code, text)
	}
}

func (a *acker) waiting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0 || a.sending > 0
}

func (a *acker) hasPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0
}

// ready counts the deletes that may be sent at now and returns when the oldest of them
// was queued.
func (a *acker) ready(now time.Time) (count int, oldest time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pending {
		if !p.notBefore.After(now) {
			if count == 0 || p.queued.Before(oldest) {
				oldest = p.queued
			}
			count++
		}
	}
	return count, oldest
}

func (a *acker) nextRetry() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var next time.Time
	for _, p := range a.pending {
		if next.IsZero() || p.notBefore.Before(next) {
			next = p.notBefore
		}
	}
	return next, !next.IsZero()
}

// flush sends the ready deletes, ten per call, each call on its own goroutine once one
// of the maxInFlight places is free: all of them when all is true, else only full
// batches. A batch is taken when its call can start, so deletes queued while every call
// was busy join it.
func (a *acker) flush(all bool) {
	for {
		a.inFlight <- struct{}{}
		batch := a.take(all)
		if len(batch) == 0 {
			<-a.inFlight
			return
		}
		a.calls.Go(func() {
			defer func() { <-a.inFlight }()
			a.send(batch)
			a.mu.Lock()
			a.sending -= len(batch)
			more := len(a.pending) > 0
			a.mu.Unlock()
			if more {
				a.signal()
			}
		})
	}
}

// take removes up to 10 ready deletes from pending (none unless 10 are ready, when all
// is false) and counts them as sending.
func (a *acker) take(all bool) []*pendingDelete {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var batch []*pendingDelete
	for _, p := range a.pending {
		if !p.notBefore.After(now) {
			batch = append(batch, p)
			if len(batch) == sqsinfo.MaxBatchEntries {
				break
			}
		}
	}
	if len(batch) == 0 || (!all && len(batch) < sqsinfo.MaxBatchEntries) {
		return nil
	}
	kept := a.pending[:0]
	next := 0
	for _, p := range a.pending {
		if next < len(batch) && p == batch[next] {
			next++
			continue
		}
		kept = append(kept, p)
	}
	clear(a.pending[len(kept):])
	a.pending = kept
	a.sending += len(batch)
	return batch
}

// send makes one DeleteMessageBatch call and acts on each entry's result (sqsx reads
// them: one entry-id scheme, missing entries and duplicate ids handled).
func (a *acker) send(batch []*pendingDelete) {
	handles := make([]string, len(batch))
	for i, p := range batch {
		handles[i] = p.delivery.message.ReceiptHandle
	}
	ctx, cancel := context.WithTimeout(a.callContext, deleteCallTimeout)
	defer cancel()
	results := sqsx.DeleteMessages(ctx, a.api, a.queueURL, handles, withoutRetryQuota)
	if callErr, ok := errors.AsType[*sqsx.CallError](results[0].Err); ok {
		a.logger.Warn("poller: DeleteMessageBatch failed; retrying its entries", "error", callErr.Err, "entries", len(batch))
		for _, p := range batch {
			a.retry(p, sqsx.ErrorCode(callErr.Err), callErr.Err.Error())
		}
		return
	}
	// No per-message logger unless debug logs are on: building it was 4% of the
	// poller's CPU in the no-op bench (docs/benchmarks.md).
	debug := a.logger.Enabled(a.callContext, slog.LevelDebug)
	for i, result := range results {
		p := batch[i]
		if result.Err == nil {
			if debug {
				messageLogger(a.logger, p.delivery.message).Debug("poller: message deleted")
			}
			a.mu.Lock()
			a.confirmed++
			a.mu.Unlock()
			a.settle.Deleted(a.callContext, p.delivery.settleDelivery())
			continue
		}
		entry, _ := errors.AsType[*sqsx.EntryError](result.Err)
		if entry.SenderFault {
			a.giveUp(p, "poller: delete rejected (sender fault); not retried, the message will be delivered again", entry.Code, entry.Message)
			continue
		}
		text := entry.Message
		if entry.Code == sqsx.CodeMissing {
			text = "entry missing from the DeleteMessageBatch response"
		}
		a.retry(p, entry.Code, text)
	}
}

// retry queues p again after retryDelay (at least 200 ms, jittered, doubling up to
// 2 s), unless its receipt handle would expire first.
func (a *acker) retry(p *pendingDelete, code, text string) {
	p.attempts++
	p.code, p.text = code, text
	delay := retryDelay(p.attempts)
	p.queued = time.Now()
	p.notBefore = p.queued.Add(delay)
	if p.notBefore.Add(receiptSafetyMargin).After(p.expires) {
		a.giveUp(p, "poller: delete failed until the receipt handle expired; the message will be delivered again", code, text)
		return
	}
	messageLogger(a.logger, p.delivery.message).Warn("poller: delete failed; retrying", "code", code, "error", text, "attempt", p.attempts)
	a.mu.Lock()
	a.pending = append(a.pending, p)
	a.mu.Unlock()
}

func (a *acker) giveUp(p *pendingDelete, message, code, text string) {
	a.mu.Lock()
	a.unconfirmed++
	a.mu.Unlock()
	messageLogger(a.logger, p.delivery.message).Error(message, "code", code, "error", text, "attempts", p.attempts+1)
	a.settle.DeleteFailed(a.callContext, p.delivery.settleDelivery(), fmt.Errorf("%s: %s: %s", message, code, text))
}
