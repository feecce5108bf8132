package poller

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// visibilityCallTimeout bounds one ChangeMessageVisibility(Batch) or SendMessage call
// made to settle a message.
const visibilityCallTimeout = 10 * time.Second

// settler is the poller's side of settling a message; internal/settle carries out
// sqsworker.Classify's decision (the same rules as the Lambda host), and this type
// supplies what differs here:
//
//   - a message done with (handled, or sent to the dead-letter queue) is queued on the
//     acker (DeleteMessageBatch), which reports it deleted once SQS confirms;
//   - a message to retry gets its visibility changed at once (ChangeMessageVisibility);
//     on a FIFO queue the change waits for the dispatcher, which sends it in one
//     ChangeMessageVisibilityBatch with the release of the group's later messages;
//   - release makes messages visible again at once (visibility 0).
//
// Every step is reported to the observer through internal/settle.
type settler struct {
	api         API
	queueURL    string
	core        *settle.Settler
	extender    *extender
	acker       *acker
	logger      *slog.Logger
	callContext context.Context
}

type settlerParams struct {
	api         API
	queueURL    string
	settle      *settle.Settler
	extender    *extender
	acker       *acker
	logger      *slog.Logger
	callContext context.Context
}

func newSettler(params settlerParams) *settler {
	return &settler{
		api:         params.api,
		queueURL:    params.queueURL,
		core:        params.settle,
		extender:    params.extender,
		acker:       params.acker,
		logger:      params.logger,
		callContext: params.callContext,
	}
}

func (d *delivery) settleDelivery() settle.Delivery {
	return settle.Delivery{Message: d.message, ReceivedAt: d.receivedAt, StartedAt: d.startedAt}
}

// heldDelivery is d for events of other goroutines than its handler's (heartbeats): its
// message and receive time, which never change after the receive.
func (d *delivery) heldDelivery() settle.Delivery {
	return settle.Delivery{Message: d.message, ReceivedAt: d.receivedAt}
}

// received reports a just received message.
func (s *settler) received(d *delivery) {
	s.core.Received(s.callContext, d.settleDelivery())
}

// started reports that d's handler is called.
func (s *settler) started(d *delivery) {
	d.startedAt = s.core.Started(s.callContext, d.settleDelivery())
}

// abandoned reports a handler that did not return within cancelGrace after its context
// was cancelled; the message is settled (or released) without waiting for it.
func (s *settler) abandoned(d *delivery, why string) {
	s.core.Abandoned(s.callContext, d.settleDelivery(), why)
}

// settle applies the outcome of handlerErr to d and stops its heartbeat. It reports
// whether the message is done with (deleted or dead-lettered), so the rest of a FIFO
// group may go on. When hold is true (a FIFO message) a visibility change is left in
// d.pending for the dispatcher to send with the release of the group's rest (flush).
func (s *settler) settle(d *delivery, handlerErr error, hold bool) bool {
	d.visibleUntil = s.extender.remove(d.lease)
	return s.core.Settle(s.callContext, d.settleDelivery(), handlerErr, finisher{s: s, d: d, hold: hold})
}

// finisher is the poller's settle.Finisher for one delivery.
type finisher struct {
	s    *settler
	d    *delivery
	hold bool
}

func (f finisher) Finish(context.Context, settle.Delivery) {
	f.s.acker.add(f.d, f.d.visibleUntil)
}

func (f finisher) Reschedule(_ context.Context, _ settle.Delivery, action settle.Action) {
	f.d.pending = &action
	if !f.hold {
		f.s.flush([]*delivery{f.d}, "")
	}
}

// release makes deliveries visible again at once (visibility 0), unhandled or
// abandoned, so another worker gets them within seconds instead of after their
// visibility timeout. It stops their heartbeats first.
func (s *settler) release(deliveries []*delivery, why string) {
	for _, d := range deliveries {
		s.extender.remove(d.lease)
	}
	s.flush(deliveries, why)
}

// flush sends the visibility changes of deliveries: d.pending for a rescheduled one
// (whose heartbeat was stopped when it was settled), 0 for the others, released for
// why. A single reschedule is one ChangeMessageVisibility call; anything more, one
// ChangeMessageVisibilityBatch per ten (a failed FIFO message and its group's rest
// together). A failed change is logged: the handler's original error is the failure
// reported, and the message returns after its current visibility timeout.
func (s *settler) flush(deliveries []*delivery, why string) {
	if len(deliveries) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.callContext, visibilityCallTimeout)
	defer cancel()
	if len(deliveries) == 1 && deliveries[0].pending != nil {
		d := deliveries[0]
		_, err := s.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl:          aws.String(s.queueURL),
			ReceiptHandle:     aws.String(d.message.ReceiptHandle),
			VisibilityTimeout: d.pending.Seconds(),
		}, withoutRetryQuota)
		s.core.Rescheduled(s.callContext, d.settleDelivery(), *d.pending, err)
		return
	}
	changes := make([]sqsx.VisibilityChange, len(deliveries))
	for i, d := range deliveries {
		changes[i] = sqsx.VisibilityChange{ReceiptHandle: d.message.ReceiptHandle}
		if d.pending != nil {
			changes[i].Timeout = d.pending.Visibility
		}
	}
	for i, result := range sqsx.ChangeVisibility(ctx, s.api, s.queueURL, changes, withoutRetryQuota) {
		d := deliveries[i]
		if d.pending != nil {
			s.core.Rescheduled(s.callContext, d.settleDelivery(), *d.pending, result.Err)
			continue
		}
		logger := messageLogger(s.logger, d.message)
		if result.Err != nil {
			logger.Warn("poller: releasing the message failed; it returns after its visibility timeout",
				"why", why, "code", sqsx.ErrorCode(result.Err), "error", result.Err)
		} else {
			logger.Info("poller: message released", "why", why)
		}
		s.core.Released(s.callContext, d.settleDelivery(), why)
	}
}
