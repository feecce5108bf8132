package poller

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// visibilityCallTimeout bounds one ChangeMessageVisibility(Batch) or SendMessage call
// made to settle a message.
const visibilityCallTimeout = 10 * time.Second

// settler turns a handler's result into what happens to the message in SQS. It is the
// one place where [sqsworker.Classify]'s decision is carried out:
//
//   - delete: queued on the acker (DeleteMessageBatch);
//   - dead-letter: SendToDeadLetterQueue, then delete only after that succeeded; if the
//     send fails (or DisableDeadLetterSend is set), an ordinary retry, so the redrive
//     policy still brings the message to the dead-letter queue;
//   - retry-after and defer: ChangeMessageVisibility to the requested delay, clamped to
//     what SQS accepts;
//   - retry: ChangeMessageVisibility to the Backoff policy's delay.
//
// A failed ChangeMessageVisibility is a warning: the handler's original error is the
// failure reported, and the message returns after its current visibility timeout.
type settler struct {
	api          API
	queue        *sqsworker.Queue
	backoff      sqsworker.Backoff
	deadLetter   bool
	extender     *extender
	acker        *acker
	errorHandler func(ctx context.Context, message *sqsworker.Message, err error)
	logger       *slog.Logger
	stats        *counters
	callContext  context.Context
}

type settlerParams struct {
	api                   API
	queue                 *sqsworker.Queue
	backoff               sqsworker.Backoff
	disableDeadLetterSend bool
	extender              *extender
	acker                 *acker
	errorHandler          func(ctx context.Context, message *sqsworker.Message, err error)
	logger                *slog.Logger
	stats                 *counters
	callContext           context.Context
}

func newSettler(params settlerParams) *settler {
	return &settler{
		api:          params.api,
		queue:        params.queue,
		backoff:      params.backoff,
		deadLetter:   !params.disableDeadLetterSend,
		extender:     params.extender,
		acker:        params.acker,
		errorHandler: params.errorHandler,
		logger:       params.logger,
		stats:        params.stats,
		callContext:  params.callContext,
	}
}

// settle applies the outcome of handlerErr to d and stops its heartbeat. It reports
// whether the message is done with (deleted or dead-lettered), so the rest of a FIFO
// group may go on.
func (s *settler) settle(d *delivery, handlerErr error) bool {
	defer s.stats.inFlight.Add(-1)
	visibleUntil := s.extender.remove(d.lease)
	outcome := sqsworker.Classify(handlerErr)
	logger := messageLogger(s.logger, d.message)
	if outcome.Failed() {
		s.reportFailure(d, outcome, logger)
	}
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
		s.acker.add(d, visibleUntil)
		return true
	case sqsworker.OutcomeDeadLetter:
		if s.deadLetter {
			ctx, cancel := context.WithTimeout(s.callContext, visibilityCallTimeout)
			err := sqsworker.SendToDeadLetterQueue(ctx, s.api, s.queue, d.message, outcome)
			cancel()
			if err == nil {
				s.stats.deadLettered.Add(1)
				logger.Info("poller: message sent to the dead-letter queue", "reason", outcome.Reason)
				s.acker.add(d, visibleUntil)
				return true
			}
			logger.Warn("poller: dead-letter send failed; retrying the message instead, the redrive policy will move it", "error", err)
		}
		s.reschedule(d, s.backoffDelay(d), outcome, logger)
	case sqsworker.OutcomeDefer:
		s.stats.deferred.Add(1)
		logger.Info("poller: message deferred", "reason", outcome.Reason, "delay", outcome.Delay)
		s.reschedule(d, sqsworker.ClampVisibility(outcome.Delay, s.sinceReceive(d)), outcome, logger)
	case sqsworker.OutcomeRetryAfter:
		s.reschedule(d, sqsworker.ClampVisibility(outcome.Delay, s.sinceReceive(d)), outcome, logger)
	default:
		s.reschedule(d, s.backoffDelay(d), outcome, logger)
	}
	return false
}

// reportFailure logs a failed attempt with the handler's error and calls the
// ErrorHandler.
func (s *settler) reportFailure(d *delivery, outcome sqsworker.Outcome, logger *slog.Logger) {
	s.stats.failed.Add(1)
	attributes := []any{"error", outcome.Err, "outcome", outcome.Kind.String(), "reason", outcome.Reason}
	if cause := failureCause(outcome.Err); cause != "" {
		attributes = append(attributes, "cause", cause)
	}
	logger.Error("poller: handler failed", attributes...)
	if s.errorHandler != nil {
		s.errorHandler(s.callContext, d.message, outcome.Err)
	}
}

// Failure causes logged with a failed attempt (the "cause" attribute).
const (
	// causeClientRetryQuota: an AWS SDK client in the handler ran out of its client-side
	// retry quota (ratelimit.QuotaExceededError, "retry quota exceeded"). The service
	// did not throttle this call; the client's token bucket, shared by all its calls,
	// was drained by earlier retries. The attempt is retried with Backoff like any
	// transient error.
	causeClientRetryQuota = "client_retry_quota"
	// causeThrottledByService: the service answered a throttling error (for example
	// ThrottlingException, ProvisionedThroughputExceededException).
	causeThrottledByService = "throttled_by_service"
)

// failureCause names the kind of a transient AWS failure in err, or "".
func failureCause(err error) string {
	if _, ok := errors.AsType[ratelimit.QuotaExceededError](err); ok {
		return causeClientRetryQuota
	}
	if (retry.ThrottleErrorCode{Codes: retry.DefaultThrottleErrorCodes}).IsErrorThrottle(err) == aws.TrueTernary {
		return causeThrottledByService
	}
	return ""
}

// sinceReceive is how long the message has been received, for the 12-hour visibility
// limit: since its first receive when SQS reported it, and never less than since this
// delivery's receive.
func (s *settler) sinceReceive(d *delivery) time.Duration {
	now := time.Now()
	return max(d.message.SinceFirstReceive(now), now.Sub(d.receivedAt))
}

func (s *settler) backoffDelay(d *delivery) time.Duration {
	return s.backoff.Delay(d.message.ReceiveCount, s.sinceReceive(d))
}

// reschedule makes the message visible again after delay.
func (s *settler) reschedule(d *delivery, delay time.Duration, outcome sqsworker.Outcome, logger *slog.Logger) {
	seconds := sqsworker.VisibilitySeconds(delay)
	ctx, cancel := context.WithTimeout(s.callContext, visibilityCallTimeout)
	defer cancel()
	_, err := s.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(s.queue.URL),
		ReceiptHandle:     aws.String(d.message.ReceiptHandle),
		VisibilityTimeout: seconds,
	}, withoutRetryQuota)
	if err != nil {
		s.stats.rescheduleFailures.Add(1)
		logger.Warn("poller: rescheduling the message failed; it returns after its current visibility timeout",
			"error", err, "code", errorCode(err), "outcome", outcome.Kind.String(), "handler_error", outcome.Err)
		return
	}
	logger.Debug("poller: message rescheduled", "outcome", outcome.Kind.String(), "visibility_seconds", seconds)
}

// release makes deliveries visible again at once (visibility 0), unhandled or
// abandoned, so another worker gets them within seconds instead of after their
// visibility timeout. It stops their heartbeats first.
func (s *settler) release(deliveries []*delivery, why string) {
	defer s.stats.inFlight.Add(-int64(len(deliveries)))
	for _, d := range deliveries {
		s.extender.remove(d.lease)
	}
	inBatches(deliveries, func(batch []*delivery) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
		for i, d := range batch {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(d.message.ReceiptHandle),
				VisibilityTimeout: 0,
			}
		}
		ctx, cancel := context.WithTimeout(s.callContext, visibilityCallTimeout)
		output, err := s.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(s.queue.URL),
			Entries:  entries,
		}, withoutRetryQuota)
		cancel()
		if err != nil {
			for _, d := range batch {
				messageLogger(s.logger, d.message).Warn("poller: releasing the message failed; it returns after its visibility timeout", "why", why, "error", err)
			}
			return
		}
		for _, entry := range output.Successful {
			if index, ok := entryIndex(entry.Id, len(batch)); ok {
				s.stats.released.Add(1)
				messageLogger(s.logger, batch[index].message).Info("poller: message released", "why", why)
			}
		}
		for _, entry := range output.Failed {
			if index, ok := entryIndex(entry.Id, len(batch)); ok {
				messageLogger(s.logger, batch[index].message).Warn("poller: releasing the message failed; it returns after its visibility timeout",
					"why", why, "code", aws.ToString(entry.Code), "error", aws.ToString(entry.Message))
			}
		}
	})
}
