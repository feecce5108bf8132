package poller

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
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
	stats             *counters
	callContext       context.Context
	callErrorsLimiter logLimiter

	mu     sync.Mutex
	leases map[*lease]struct{}

	stop chan struct{}
	done chan struct{}
}

type extenderParams struct {
	api         API
	queue       *sqsworker.Queue
	interval    time.Duration
	extension   time.Duration
	initial     time.Duration
	logger      *slog.Logger
	stats       *counters
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
		stats:             params.stats,
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
	inBatches(due, e.extend)
}

// extend sends one ChangeMessageVisibilityBatch for batch, holding each lease's lock
// for the duration of the call. Entry ids are indexes into sent.
func (e *extender) extend(batch []*lease) {
	now := time.Now()
	var sent []*lease
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
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
		extension := sqsworker.ClampVisibility(e.extension, now.Sub(l.delivery.receivedAt))
		if extension <= e.interval {
			l.stopped = true
			l.mu.Unlock()
			messageLogger(e.logger, l.delivery.message).Warn("poller: heartbeat stopped: the message is close to SQS's 12h visibility limit")
			continue
		}
		sent = append(sent, l)
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(len(sent) - 1)),
			ReceiptHandle:     aws.String(l.delivery.message.ReceiptHandle),
			VisibilityTimeout: sqsworker.VisibilitySeconds(extension),
		})
	}
	if len(entries) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.callContext, max(e.interval, time.Second))
	defer cancel()
	output, err := e.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(e.queueURL),
		Entries:  entries,
	}, withoutRetryQuota)
	if err != nil {
		e.callFailed(sent, now, err)
		return
	}
	for _, entry := range output.Successful {
		if index, ok := entryIndex(entry.Id, len(sent)); ok {
			sent[index].visibleUntil = now.Add(time.Duration(entries[index].VisibilityTimeout) * time.Second)
			sent[index].nextDue = now.Add(e.interval)
		}
	}
	for _, entry := range output.Failed {
		index, ok := entryIndex(entry.Id, len(sent))
		if !ok {
			continue
		}
		sent[index].stopped = true
		e.stats.heartbeat.Add(1)
		messageLogger(e.logger, sent[index].delivery.message).Warn("poller: heartbeat failed; no further heartbeats for this message",
			"code", aws.ToString(entry.Code), "sender_fault", entry.SenderFault, "error", aws.ToString(entry.Message))
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
			e.stats.heartbeat.Add(1)
			messageLogger(e.logger, l.delivery.message).Warn("poller: heartbeat failed until the visibility ran out; no further heartbeats for this message", "error", err)
			continue
		}
		l.nextDue = now.Add(heartbeatRetryDelay + rand.N(heartbeatRetryDelay/2))
	}
}

// entryIndex parses a batch entry id, which is the entry's index ("0".."9"), and
// checks it against the batch size.
func entryIndex(id *string, size int) (int, bool) {
	index, err := strconv.Atoi(aws.ToString(id))
	return index, err == nil && index >= 0 && index < size
}
