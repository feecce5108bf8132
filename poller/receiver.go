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
)

const (
	// minReceiveErrorDelay and maxReceiveErrorDelay bound the exponential pause after
	// a failed ReceiveMessage call.
	minReceiveErrorDelay = 500 * time.Millisecond
	maxReceiveErrorDelay = 20 * time.Second
	// receiveErrorLogInterval: a repeated receive error is logged at most this often.
	receiveErrorLogInterval = 30 * time.Second
)

// receiver long-polls the queue: one ReceiveMessage call at a time, asking for as many
// messages as there are free slots (at most MaxMessages), so no message waits received
// but unstarted while its visibility clock runs.
type receiver struct {
	api         API
	queue       *sqsworker.Queue
	maxMessages int
	waitTime    time.Duration
	slots       slots
	extender    *extender
	dispatcher  *dispatcher
	logger      *slog.Logger
	stats       *counters
	errors      logLimiter

	// pollContext is the context of every ReceiveMessage call. It is not cancelled when
	// the receiver stops, only at abort: cancelling a long poll does not stop SQS from
	// handing it messages, which would then stay invisible for their whole visibility
	// timeout (aws/aws-sdk-go-v2#2068; LocalStack behaves the same).
	pollContext context.Context
	abortPoll   context.CancelFunc

	stopping chan struct{} // closed by stop: no new ReceiveMessage call starts
	done     chan struct{} // closed when the loop has returned
}

type receiverParams struct {
	api         API
	queue       *sqsworker.Queue
	maxMessages int
	waitTime    time.Duration
	slots       slots
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
		maxMessages: params.maxMessages,
		waitTime:    params.waitTime,
		slots:       params.slots,
		extender:    params.extender,
		dispatcher:  params.dispatcher,
		logger:      params.logger,
		stats:       params.stats,
		errors:      logLimiter{interval: receiveErrorLogInterval},
		pollContext: pollContext,
		abortPoll:   abort,
		stopping:    make(chan struct{}),
		done:        make(chan struct{}),
	}
}

// start runs the receive loop until stop.
func (r *receiver) start(wg *sync.WaitGroup) {
	wg.Go(func() {
		defer close(r.done)
		defer r.abortPoll()
		errorDelay := time.Duration(0)
		for {
			taken := r.slots.acquire(r.stopping, r.maxMessages)
			if taken == 0 || r.stopped() {
				r.slots.release(taken)
				return
			}
			deliveries, err := r.receive(taken)
			if err != nil {
				errorDelay = min(max(errorDelay*2, minReceiveErrorDelay), maxReceiveErrorDelay)
				if !r.pause(errorDelay) {
					return
				}
				continue
			}
			errorDelay = 0
			if r.stopped() {
				// The poll was in flight when the shutdown began: hand nothing to a
				// handler, give every message back at once.
				r.dispatcher.releaseUnstarted(deliveries, "received after shutdown began")
				return
			}
			r.dispatcher.dispatch(deliveries)
		}
	})
}

// receive makes one ReceiveMessage call for up to count messages. It gives back the
// slots it does not use and registers the messages' heartbeats.
func (r *receiver) receive(count int) ([]*delivery, error) {
	r.stats.receiveCalls.Add(1)
	receivedAt := time.Now()
	output, err := r.api.ReceiveMessage(r.pollContext, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(r.queue.URL),
		MaxNumberOfMessages:         int32(count),
		WaitTimeSeconds:             int32(r.waitTime / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		r.slots.release(count)
		if r.pollContext.Err() == nil {
			r.stats.receiveErrors.Add(1)
			if ok, suppressed := r.errors.allow(time.Now()); ok {
				r.logger.Error("poller: ReceiveMessage failed", "error", err, "code", errorCode(err), "suppressed_since_last_log", suppressed)
			}
		}
		return nil, err
	}
	messages := output.Messages
	r.stats.received.Add(int64(len(messages)))
	r.stats.inFlight.Add(int64(len(messages)))
	var extra []*delivery
	deliveries := make([]*delivery, 0, len(messages))
	for i, message := range messages {
		d := &delivery{message: convertMessage(message, r.queue), receivedAt: receivedAt}
		r.extender.add(d)
		if i < count {
			deliveries = append(deliveries, d)
		} else { // SQS never returns more than asked; keep the slot accounting exact anyway
			extra = append(extra, d)
		}
	}
	r.slots.release(count - len(deliveries))
	if len(extra) > 0 {
		r.dispatcher.settler.release(extra, "more messages received than asked for")
	}
	return deliveries, nil
}

// pause waits after a receive error; it returns false when stop came first.
func (r *receiver) pause(delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.stopping:
		return false
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

// stop makes the loop start no new ReceiveMessage call. A call in flight may finish
// (at most WaitTime); whatever it returns is released at once.
func (r *receiver) stop() {
	close(r.stopping)
}

// abort cancels a ReceiveMessage call still in flight (at the drain deadline).
func (r *receiver) abort() {
	r.abortPoll()
}
