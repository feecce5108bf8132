package poller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

const (
	// minReceiveErrorDelay and maxReceiveErrorDelay bound the exponential pause after
	// a failed ReceiveMessage call.
	minReceiveErrorDelay = 500 * time.Millisecond
	maxReceiveErrorDelay = 20 * time.Second
	// receiveErrorLogInterval: a repeated receive error is logged at most this often.
	receiveErrorLogInterval = 30 * time.Second
)

// receiver long-polls the queue with Config.Receivers loops. Each loop keeps at most
// one ReceiveMessage call in flight, asking for as many messages as there are free slots
// (at most MaxMessages); the loops take their slots from the one semaphore, so all the
// calls in flight together never ask for more messages than there are free slots, and
// no message waits received but unstarted while its visibility clock runs, unless
// Config.Prefetch adds slots for such held messages (see pool.acquire for when a loop
// waits for a full batch). The loops share the stop
// signal, the poll context, the receive-error back-off and the error log limiter.
type receiver struct {
	api         API
	queue       *sqsinfo.Queue
	lane        *lane
	maxMessages int
	loops       int
	waitTime    time.Duration
	visibility  time.Duration
	pool        *pool
	extender    *extender
	dispatcher  *dispatcher
	logger      *slog.Logger
	stats       *counters
	errors      logLimiter
	backoff     receiveBackoff

	// pollContext is the context of every ReceiveMessage call. It is not cancelled when
	// the receiver stops, only at abort: cancelling a long poll does not stop SQS from
	// handing it messages, which would then stay invisible for their whole visibility
	// timeout (aws/aws-sdk-go-v2#2068; LocalStack behaves the same).
	pollContext context.Context
	abortPoll   context.CancelFunc

	running  sync.WaitGroup // the receive loops, owned by the receiver
	stopping chan struct{}  // closed by stop: no new ReceiveMessage call starts
	done     chan struct{}  // closed when every loop has returned
}

type receiverParams struct {
	api         API
	queue       *sqsinfo.Queue
	lane        *lane
	maxMessages int
	receivers   int
	waitTime    time.Duration
	visibility  time.Duration
	pool        *pool
	extender    *extender
	dispatcher  *dispatcher
	logger      *slog.Logger
	stats       *counters
	baseContext context.Context
}

func newReceiver(params receiverParams) *receiver {
	pollContext, abort := context.WithCancel(params.baseContext)
	return &receiver{
		api:         params.api,
		queue:       params.queue,
		lane:        params.lane,
		maxMessages: params.maxMessages,
		loops:       max(params.receivers, 1),
		waitTime:    params.waitTime,
		visibility:  params.visibility,
		pool:        params.pool,
		extender:    params.extender,
		dispatcher:  params.dispatcher,
		logger:      params.logger,
		stats:       params.stats,
		errors:      logLimiter{interval: receiveErrorLogInterval},
		backoff:     receiveBackoff{changed: make(chan struct{})},
		pollContext: pollContext,
		abortPoll:   abort,
		stopping:    make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// start runs the receive loops until stop. The loops belong to the receiver (running);
// one goroutine on wg waits for them, then closes done.
func (r *receiver) start(wg *sync.WaitGroup) {
	for range r.loops {
		r.running.Go(r.loop)
	}
	wg.Go(func() {
		r.running.Wait()
		r.abortPoll()
		close(r.done)
	})
}

// loop is one receive loop: wait out the shared back-off, take free slots, make one
// ReceiveMessage call for them, hand what it returns to the dispatcher; until stop.
func (r *receiver) loop() {
	for {
		probe, ok := r.backoff.wait(r.stopping)
		if !ok {
			return
		}
		// A rate-limited queue is polled only for the tokens free (QueueConfig.Limit).
		limit := r.lane.rate.available(r.stopping, r.awaiting, r.maxMessages)
		taken, idleProbe := 0, false
		if limit > 0 {
			taken, idleProbe = r.pool.acquire(r.lane.slots, r.stopping, limit)
		}
		if taken == 0 || r.stopped() {
			if taken > 0 {
				r.pool.received(r.lane.slots, taken, 0, idleProbe, false)
			}
			r.backoff.abandon(probe)
			return
		}
		deliveries, err := r.receive(taken, idleProbe)
		if err != nil {
			r.backoff.failed(probe, time.Now())
			continue
		}
		r.backoff.succeeded(probe)
		if r.stopped() {
			// The poll was in flight when the shutdown began: hand nothing to a
			// handler, give every message back at once.
			r.dispatcher.releaseUnstarted(deliveries, "received after shutdown began")
			return
		}
		r.dispatcher.dispatch(deliveries)
	}
}

// awaiting is how many of the queue's received messages wait for a rate token.
func (r *receiver) awaiting() int { return int(r.lane.awaiting.Load()) }

// receive makes one ReceiveMessage call for up to count messages, the slots taken for
// it (probe: an idle queue's probe, see pool). It ends the receive's hold on them (see
// pool.received) and registers the messages' heartbeats.
func (r *receiver) receive(count int, probe bool) ([]*delivery, error) {
	r.stats.receiveCalls.Add(1)
	receivedAt := time.Now()
	output, err := r.api.ReceiveMessage(r.pollContext, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(r.queue.URL),
		MaxNumberOfMessages:         int32(count),
		WaitTimeSeconds:             sqsx.WaitSeconds(r.waitTime),
		VisibilityTimeout:           sqsx.VisibilitySeconds(r.visibility),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}, r.noRetryOnceStopping)
	if err != nil {
		r.pool.received(r.lane.slots, count, 0, probe, false)
		if r.pollContext.Err() == nil {
			r.stats.receiveErrors.Add(1)
			if ok, suppressed := r.errors.allow(time.Now()); ok {
				r.logger.Error("poller: ReceiveMessage failed", "error", err, "code", errorCode(err), "suppressed_since_last_log", suppressed)
			}
		}
		return nil, err
	}
	messages := output.Messages
	var extra []*delivery
	deliveries := make([]*delivery, 0, len(messages))
	for i, message := range messages {
		d := &delivery{lane: r.lane, message: convertMessage(message, r.queue), receivedAt: receivedAt}
		r.lane.settler.received(d)
		r.extender.add(d)
		if i < count {
			if r.lane.rate != nil {
				d.awaitsToken = true
				r.lane.awaiting.Add(1)
			}
			deliveries = append(deliveries, d)
		} else { // SQS never returns more than asked; keep the slot accounting exact anyway
			extra = append(extra, d)
		}
	}
	r.pool.received(r.lane.slots, count, len(deliveries), probe, true)
	if len(extra) > 0 {
		r.lane.settler.release(extra, "more messages received than asked for")
	}
	return deliveries, nil
}

// noRetryOnceStopping is a per-call option of ReceiveMessage: once the receiver is
// stopping, the SDK's retryer retries no failed attempt, so no new long poll starts
// after a shutdown began (a retry of a reset connection would be a fresh WaitTime poll).
func (r *receiver) noRetryOnceStopping(options *sqs.Options) {
	if options.Retryer != nil {
		options.Retryer = &stopRetrying{RetryerV2: asRetryerV2(options.Retryer), stopping: r.stopping}
	}
}

func (r *receiver) stopped() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// stop makes the loops start no new ReceiveMessage call. The calls in flight (one per
// loop at most) may finish (at most WaitTime); whatever they return is released at once.
func (r *receiver) stop() {
	close(r.stopping)
}

// abort cancels the ReceiveMessage calls still in flight (when Shutdown's ctx ends).
func (r *receiver) abort() {
	r.abortPoll()
}

// receiveBackoff is the receive loops' one shared pause after failed ReceiveMessage
// calls. While SQS answers, every loop calls freely. After a failure no loop calls for
// the delay (doubling from minReceiveErrorDelay up to maxReceiveErrorDelay); then one
// loop probes while the others wait for its result: a success lets every loop go again,
// a failure doubles the delay. So an outage costs one call per delay, as with a single
// loop, however many loops there are. Failures of calls that began before the pause
// (the other loops' long polls in flight) do not lengthen it.
type receiveBackoff struct {
	mu      sync.Mutex
	delay   time.Duration // the current pause; 0 while SQS answers
	until   time.Time     // no call starts before this
	probing bool          // a probe is in flight: the other loops wait for its result
	changed chan struct{} // closed, and replaced, when the state changes
}

// wait returns when the loop may call ReceiveMessage; probe reports that the call is
// the one probe after a pause, whose result must be reported (failed, succeeded or
// abandon). It returns ok false when stop came first.
func (b *receiveBackoff) wait(stop <-chan struct{}) (probe, ok bool) {
	for {
		select {
		case <-stop:
			return false, false
		default:
		}
		b.mu.Lock()
		if b.delay == 0 {
			b.mu.Unlock()
			return false, true
		}
		now := time.Now()
		if !b.probing && !now.Before(b.until) {
			b.probing = true
			b.mu.Unlock()
			return true, true
		}
		changed := b.changed
		var timer *time.Timer
		var expired <-chan time.Time // nil while a probe is in flight: wait for its result
		if !b.probing {
			timer = time.NewTimer(b.until.Sub(now))
			expired = timer.C
		}
		b.mu.Unlock()
		select {
		case <-changed:
		case <-expired:
		case <-stop:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// failed records a failed call made after wait.
func (b *receiveBackoff) failed(probe bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	} else if b.delay != 0 {
		return // begun before the pause: it says nothing new
	}
	b.delay = min(max(b.delay*2, minReceiveErrorDelay), maxReceiveErrorDelay)
	b.until = now.Add(b.delay)
	b.broadcast()
}

// succeeded records a successful call made after wait: the pause, if any, is over.
func (b *receiveBackoff) succeeded(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	if b.delay != 0 || probe {
		b.delay, b.until = 0, time.Time{}
		b.broadcast()
	}
}

// abandon records that the loop made no call after wait (it is stopping).
func (b *receiveBackoff) abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	b.broadcast()
}

// broadcast wakes the waiting loops. b.mu must be held.
func (b *receiveBackoff) broadcast() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// convertMessage translates an SDK message into the neutral message handlers see.
func convertMessage(in types.Message, queue *sqsinfo.Queue) *sqsworker.Message {
	return sqsx.FromSDK(in, queue.URL, queue.ARN)
}
