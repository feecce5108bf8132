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
)

// pendingDelete is one message waiting for, or retrying, its delete.
type pendingDelete struct {
	delivery *delivery
	// expires is when the receipt handle stops being usable (the message's visibility
	// ends); the delete is not retried after it.
	expires time.Time
	// notBefore delays a retry.
	notBefore time.Time
	attempts  int
}

// acker deletes settled messages in batches (the equivalent of asynq's syncer): a batch
// is sent when 10 deletes are pending or DeleteFlushInterval after the first one. It
// reads every entry of the response: failed entries that are not the sender's fault are
// retried, alone, with the same receipt handle, while it is still valid; sender faults
// are logged as errors with their code and not retried. A message counts as deleted only
// once SQS confirmed it.
type acker struct {
	api         API
	queueURL    string
	interval    time.Duration
	logger      *slog.Logger
	settle      *settle.Settler
	callContext context.Context

	mu      sync.Mutex
	pending []*pendingDelete
	// sending counts deletes taken from pending whose DeleteMessageBatch has not
	// answered yet, so waiting reports them too.
	sending int

	wake chan struct{}
	// urgent is closed by flushNow: no more deletes are coming to batch with, so each
	// is sent at once.
	urgent     chan struct{}
	urgentOnce sync.Once
	stop       chan struct{}
	done       chan struct{}
}

type ackerParams struct {
	api         API
	queueURL    string
	interval    time.Duration
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
		wake:        make(chan struct{}, 1),
		urgent:      make(chan struct{}),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// add queues d's delete; expires is when its receipt handle stops being valid.
func (a *acker) add(d *delivery, expires time.Time) {
	a.mu.Lock()
	a.pending = append(a.pending, &pendingDelete{delivery: d, expires: expires})
	a.mu.Unlock()
	a.signal()
}

func (a *acker) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// start runs the flush loop until shutdown.
func (a *acker) start(wg *sync.WaitGroup) {
	wg.Go(func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				a.finalFlush()
				return
			case <-a.wake:
			}
			if !a.waitForBatch() {
				a.finalFlush()
				return
			}
			a.flush(time.Now())
			if a.waiting() {
				a.signal()
			}
		}
	})
}

// waitForBatch waits until 10 deletes are ready or the flush interval has passed. It
// returns false when shutdown was asked for.
func (a *acker) waitForBatch() bool {
	timer := time.NewTimer(a.interval)
	defer timer.Stop()
	for a.ready(time.Now()) < sqsx.MaxBatchEntries {
		select {
		case <-timer.C:
			return true
		case <-a.urgent:
			return true
		case <-a.wake:
		case <-a.stop:
			return false
		}
	}
	return true
}

// flushNow makes every pending and later delete go out at once instead of waiting
// DeleteFlushInterval for a batch to fill: the shutdown calls it when the last handler
// has finished, so the final deletes do not wait for the long polls still in flight.
func (a *acker) flushNow() {
	a.urgentOnce.Do(func() { close(a.urgent) })
	a.signal()
}

// shutdown flushes what is pending (retrying as usual, for at most 3 s) and stops.
// Call it last, after the dispatcher has settled every message.
func (a *acker) shutdown() {
	close(a.stop)
	<-a.done
}

// finalFlush sends every pending delete, retrying failed entries while their receipt
// handles are valid, until nothing is pending or finalFlushTimeout has passed.
func (a *acker) finalFlush() {
	deadline := time.Now().Add(finalFlushTimeout)
	for a.waiting() && time.Now().Before(deadline) {
		a.flush(time.Now())
		if next, ok := a.nextRetry(); ok {
			time.Sleep(min(max(time.Until(next), 0), time.Until(deadline)))
		}
	}
	a.mu.Lock()
	left := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, p := range left {
		a.giveUp(p, "poller: delete not confirmed before shutdown; the message will be delivered again", "", "")
	}
}

func (a *acker) waiting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0 || a.sending > 0
}

func (a *acker) ready(now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	count := 0
	for _, p := range a.pending {
		if !p.notBefore.After(now) {
			count++
		}
	}
	return count
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

// flush sends every ready delete, ten per call.
func (a *acker) flush(now time.Time) {
	a.mu.Lock()
	var ready []*pendingDelete
	kept := a.pending[:0]
	for _, p := range a.pending {
		if p.notBefore.After(now) {
			kept = append(kept, p)
		} else {
			ready = append(ready, p)
		}
	}
	a.pending = kept
	a.sending += len(ready)
	a.mu.Unlock()
	for _, batch := range sqsx.Chunk(ready, 0, nil, 0) {
		a.send(batch)
	}
	a.mu.Lock()
	a.sending -= len(ready)
	a.mu.Unlock()
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
	for i, result := range results {
		p := batch[i]
		if result.Err == nil {
			messageLogger(a.logger, p.delivery.message).Debug("poller: message deleted")
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
	delay := retryDelay(p.attempts)
	p.notBefore = time.Now().Add(delay)
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
	messageLogger(a.logger, p.delivery.message).Error(message, "code", code, "error", text, "attempts", p.attempts+1)
	a.settle.DeleteFailed(a.callContext, p.delivery.settleDelivery(), fmt.Errorf("%s: %s: %s", message, code, text))
}
