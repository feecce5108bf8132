package settle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// defaultCallTimeout bounds one dead-letter send when Config.CallTimeout is zero.
const defaultCallTimeout = 10 * time.Second

// Delivery is one received message while a host holds it.
type Delivery struct {
	Message *sqsworker.Message
	// ReceivedAt is when the receive that returned the message started (the poller) or
	// the invocation began (Lambda): no later than SQS started its visibility clock.
	ReceivedAt time.Time
	// StartedAt is when its handler was called; zero if it never was.
	StartedAt time.Time
}

// Finisher is what differs between the hosts when a message is settled.
type Finisher interface {
	// Finish ends a message that is done with (handled, or dead-lettered): the poller
	// queues its delete; the Lambda host reports it as a success. The host reports
	// [Settler.Deleted] or [Settler.DeleteFailed] once it knows.
	Finish(ctx context.Context, d Delivery)
	// Reschedule makes the message visible again after action.Visibility: the poller
	// changes its visibility now; the Lambda host in one batch after every record, and
	// lists it in batchItemFailures. The host reports [Settler.Rescheduled].
	Reschedule(ctx context.Context, d Delivery, action Action)
}

// DeadLetter sends failed messages to their queue's dead-letter queue.
type DeadLetter interface {
	// Queue returns the description of the message's source queue: its redrive policy
	// (whose maxReceiveCount tells the last attempt) and dead-letter queue.
	Queue(ctx context.Context, message *sqsworker.Message) (*sqsinfo.Queue, error)
	// Send sends the message with the failure attributes of outcome.
	Send(ctx context.Context, message *sqsworker.Message, outcome sqsworker.Outcome) error
}

// QueueDeadLetter is the [DeadLetter] of both hosts: [SendToDeadLetterQueue] with the
// queue Load returns for the message's queue URL (the poller's one queue, or the
// Lambda host's cache).
type QueueDeadLetter struct {
	API  SendAPI
	Load func(ctx context.Context, queueURL string) (*sqsinfo.Queue, error)
}

// Queue implements [DeadLetter].
func (q QueueDeadLetter) Queue(ctx context.Context, message *sqsworker.Message) (*sqsinfo.Queue, error) {
	return q.Load(ctx, message.QueueURL)
}

// Send implements [DeadLetter].
func (q QueueDeadLetter) Send(ctx context.Context, message *sqsworker.Message, outcome sqsworker.Outcome) error {
	queue, err := q.Load(ctx, message.QueueURL)
	if err != nil {
		return err
	}
	return SendToDeadLetterQueue(ctx, q.API, queue, message, outcome)
}

// Config configures a [Settler]. Everything a host offers here it offers on both hosts.
type Config struct {
	// Host is "poller" or "lambda": Event.Host and the log prefix.
	Host string
	// Backoff is the retry policy of failed messages.
	Backoff sqsworker.Backoff
	// DeadLetter sends permanent failures to the dead-letter queue; nil, or
	// DisableDeadLetterSend, leaves them to the redrive policy (ordinary retries).
	DeadLetter            DeadLetter
	DisableDeadLetterSend bool
	// ErrorHandler, if set, is called for every failed attempt with the handler's error.
	ErrorHandler func(ctx context.Context, message *sqsworker.Message, err error)
	// Observer is told every step; nil means sqsworker.NopObserver.
	Observer sqsworker.Observer
	// Logger receives the settlement logs; nil discards them.
	Logger *slog.Logger
	// LogQueue adds the message's queue URL to every per-message log (the Lambda host,
	// whose logger does not carry one).
	LogQueue bool
	// LogAttrs, if set, adds attributes from the context to every per-message log (the
	// Lambda request id).
	LogAttrs func(ctx context.Context) []slog.Attr
	// CallTimeout bounds one dead-letter send; if zero, 10 s.
	CallTimeout time.Duration
	// Now returns the time; if nil, time.Now.
	Now func() time.Time
}

// Settler carries out outcomes and reports every step to the observer. It is safe for
// concurrent use.
type Settler struct {
	cfg Config
	// limitWarned holds the queue URLs whose job-type attempt limit not below their
	// maxReceiveCount was logged (once per queue and limit; see warnLimit).
	limitWarned sync.Map
}

// New returns a Settler with cfg's defaults filled in.
func New(cfg Config) *Settler {
	if cfg.Observer == nil {
		cfg.Observer = sqsworker.NopObserver
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = defaultCallTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Settler{cfg: cfg}
}

// Plan is [Plan] with the settler's backoff and dead-letter setting, at now.
func (s *Settler) Plan(d Delivery, outcome sqsworker.Outcome) Action {
	return Plan(outcome, d.Message, d.ReceivedAt, s.cfg.Now(), s.cfg.Backoff, s.deadLetterSend())
}

func (s *Settler) deadLetterSend() bool {
	return s.cfg.DeadLetter != nil && !s.cfg.DisableDeadLetterSend
}

// Settle classifies handlerErr, reports EventFinished, and carries out the outcome
// through f. It reports whether the message is done with (finished: handled or
// dead-lettered), so the rest of a FIFO group may go on.
func (s *Settler) Settle(ctx context.Context, d Delivery, handlerErr error, f Finisher) bool {
	now := s.cfg.Now()
	outcome := sqsworker.Classify(handlerErr)
	finished := s.event(sqsworker.EventFinished, d, now)
	finished.Outcome = outcome
	if !d.StartedAt.IsZero() {
		finished.HandlerDuration = now.Sub(d.StartedAt)
	}
	s.cfg.Observer.Observe(ctx, finished)
	if outcome.Kind == sqsworker.OutcomeDelete {
		f.Finish(ctx, d) // the common case: no log line, no logger built
		return true
	}
	logger := s.MessageLogger(ctx, d.Message)
	if outcome.Failed() {
		text := s.cfg.Host + ": handler failed"
		if sqsworker.IsPanicError(outcome.Err) {
			text += ": panic recovered"
		}
		attributes := []any{"error", outcome.Err, "outcome", outcome.Kind.String(), "reason", outcome.Reason}
		if cause := failureCause(outcome.Err); cause != "" {
			attributes = append(attributes, "cause", cause)
		}
		logger.Error(text, attributes...)
		if s.cfg.ErrorHandler != nil {
			s.cfg.ErrorHandler(ctx, d.Message, outcome.Err)
		}
	}
	if outcome.Kind == sqsworker.OutcomeCancelled {
		logger.Info(s.cfg.Host+": job cancelled; deleting its message", "error", outcome.Err)
	}
	action := s.exhaust(ctx, logger, d, Plan(outcome, d.Message, d.ReceivedAt, now, s.cfg.Backoff, s.deadLetterSend()))
	switch {
	case action.DeadLetter:
		sent := action.DeadLetterOutcome()
		sendCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err := s.cfg.DeadLetter.Send(sendCtx, d.Message, sent)
		cancel()
		if err != nil {
			logger.Warn(s.cfg.Host+": dead-letter send failed; retrying the message instead, the redrive policy will move it",
				"error", err, "code", sqsx.ErrorCode(err), "reason", sent.Reason)
			s.observeErr(ctx, sqsworker.EventDeadLetterFailed, d, sent, err)
			f.Reschedule(ctx, d, action)
			return false
		}
		logger.Info(s.cfg.Host+": message sent to the dead-letter queue", "reason", sent.Reason)
		s.observeErr(ctx, sqsworker.EventDeadLettered, d, sent, nil)
		f.Finish(ctx, d)
		return true
	case outcome.Kind == sqsworker.OutcomeDeadLetter:
		s.observeErr(ctx, sqsworker.EventDeadLetterFailed, d, outcome, errNoDeadLetter)
		f.Reschedule(ctx, d, action)
		return false
	case action.Delete:
		f.Finish(ctx, d)
		return true
	}
	if outcome.Kind == sqsworker.OutcomeDefer {
		logger.Info(s.cfg.Host+": message deferred", "reason", outcome.Reason, "delay", outcome.Delay)
	}
	f.Reschedule(ctx, d, action)
	return false
}

// exhaust applies [Exhaust] with the redrive policy of d's queue. When the queue's
// description cannot be read, the message is retried as planned (the redrive policy
// still moves it), and that is logged.
func (s *Settler) exhaust(ctx context.Context, logger *slog.Logger, d Delivery, action Action) Action {
	if !s.deadLetterSend() || !Reschedules(action.Outcome) {
		return action
	}
	maxReceiveCount := 0
	queue, err := s.cfg.DeadLetter.Queue(ctx, d.Message)
	switch {
	case err != nil:
		// The job type's attempt limit, if any, still applies.
		logger.Warn(s.cfg.Host+": cannot read the queue's redrive policy to tell a last attempt; the redrive policy will move the message after its last receive, without a failure reason", "error", err)
	case queue != nil && queue.RedrivePolicy != nil:
		maxReceiveCount = queue.RedrivePolicy.MaxReceiveCount
		s.warnLimit(ctx, queue.URL, action.Outcome.Err, maxReceiveCount)
	}
	return Exhaust(action, d.Message, maxReceiveCount, true)
}

// warnLimit logs, once per queue and limit, a failure whose job-type attempt limit
// (sqsworker.JobMaxAttempts) is not below the queue's maxReceiveCount: the redrive
// policy's last receive comes first, so the limit leaves no receive for interrupted
// attempts. The poller refuses such a limit at start; a Lambda function learns its
// queue only from the records, so this is where it can tell.
func (s *Settler) warnLimit(ctx context.Context, queueURL string, err error, maxReceiveCount int) {
	limit, ok := sqsworker.AttemptLimit(err)
	if !ok || limit < maxReceiveCount {
		return
	}
	if _, warned := s.limitWarned.LoadOrStore(fmt.Sprintf("%s %d", queueURL, limit), true); warned {
		return
	}
	s.cfg.Logger.WarnContext(ctx, s.cfg.Host+": a job type's MaxAttempts is not below the queue's maxReceiveCount; the redrive policy's last receive ends its retries first, leaving no receive for interrupted attempts",
		"queue", queueURL, "max_attempts", limit, "max_receive_count", maxReceiveCount)
}

// Received reports EventReceived, at d.ReceivedAt (or now, when that is zero).
func (s *Settler) Received(ctx context.Context, d Delivery) {
	at := d.ReceivedAt
	if at.IsZero() {
		at = s.cfg.Now()
	}
	s.cfg.Observer.Observe(ctx, s.event(sqsworker.EventReceived, d, at))
}

// Started reports EventStarted, at d.StartedAt (or now, when that is zero), and returns
// the start time, for Delivery.StartedAt.
func (s *Settler) Started(ctx context.Context, d Delivery) time.Time {
	at := d.StartedAt
	if at.IsZero() {
		at = s.cfg.Now()
	}
	s.cfg.Observer.Observe(ctx, s.event(sqsworker.EventStarted, d, at))
	return at
}

// Deleted reports that the message is gone: its delete was confirmed (poller) or it was
// reported as a success (Lambda).
func (s *Settler) Deleted(ctx context.Context, d Delivery) {
	s.DeletedAt(ctx, d, s.cfg.Now())
}

// DeletedAt is Deleted at a time the caller read (one clock read for a whole response).
func (s *Settler) DeletedAt(ctx context.Context, d Delivery, at time.Time) {
	s.cfg.Observer.Observe(ctx, s.event(sqsworker.EventDeleted, d, at))
}

// DeleteFailed reports that the delete failed for good.
func (s *Settler) DeleteFailed(ctx context.Context, d Delivery, err error) {
	s.observeErr(ctx, sqsworker.EventDeleteFailed, d, sqsworker.Outcome{}, err)
}

// Rescheduled reports the result of the visibility change of a rescheduled message and
// logs a failure (the message then returns after its current visibility timeout).
func (s *Settler) Rescheduled(ctx context.Context, d Delivery, action Action, err error) {
	if err != nil {
		logger := s.MessageLogger(ctx, d.Message)
		logger.Warn(s.cfg.Host+": rescheduling the message failed; it returns after its current visibility timeout",
			"error", err, "code", sqsx.ErrorCode(err), "outcome", action.Outcome.Kind.String(), "handler_error", action.Outcome.Err)
		s.observeErr(ctx, sqsworker.EventRescheduleFailed, d, action.Outcome, err)
		return
	}
	if s.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		s.MessageLogger(ctx, d.Message).Debug(s.cfg.Host+": message rescheduled", "outcome", action.Outcome.Kind.String(), "visibility_seconds", action.Seconds())
	}
	ev := s.event(sqsworker.EventRescheduled, d, s.cfg.Now())
	ev.Outcome, ev.Visibility = action.Outcome, time.Duration(action.Seconds())*time.Second
	s.cfg.Observer.Observe(ctx, ev)
}

// Released reports a message made visible again at once without being handled to the
// end, and why.
func (s *Settler) Released(ctx context.Context, d Delivery, reason string) {
	ev := s.event(sqsworker.EventReleased, d, s.cfg.Now())
	ev.Reason = reason
	s.cfg.Observer.Observe(ctx, ev)
}

// Abandoned reports a handler that did not return after its context ended.
func (s *Settler) Abandoned(ctx context.Context, d Delivery, reason string) {
	ev := s.event(sqsworker.EventAbandoned, d, s.cfg.Now())
	ev.Reason = reason
	s.cfg.Observer.Observe(ctx, ev)
}

// HeartbeatExtended reports a visibility extension to visibility from now.
func (s *Settler) HeartbeatExtended(ctx context.Context, d Delivery, visibility time.Duration) {
	ev := s.event(sqsworker.EventHeartbeatExtended, d, s.cfg.Now())
	ev.Visibility = visibility
	s.cfg.Observer.Observe(ctx, ev)
}

// HeartbeatFailed reports a heartbeat that failed for good.
func (s *Settler) HeartbeatFailed(ctx context.Context, d Delivery, err error) {
	s.observeErr(ctx, sqsworker.EventHeartbeatFailed, d, sqsworker.Outcome{}, err)
}

// MessageLogger returns the logger with the attributes every per-message log carries:
// message id, receive count, message group (FIFO), queue (with LogQueue) and LogAttrs.
// Bodies are never logged.
func (s *Settler) MessageLogger(ctx context.Context, m *sqsworker.Message) *slog.Logger {
	attrs := make([]any, 0, 8)
	attrs = append(attrs, slog.String("message_id", m.ID), slog.Int("receive_count", m.ReceiveCount))
	if s.cfg.LogQueue {
		attrs = append(attrs, slog.String("queue", m.QueueURL))
	}
	if m.GroupID != "" {
		attrs = append(attrs, slog.String("message_group_id", m.GroupID))
	}
	if s.cfg.LogAttrs != nil {
		for _, attr := range s.cfg.LogAttrs(ctx) {
			attrs = append(attrs, attr)
		}
	}
	return s.cfg.Logger.With(attrs...)
}

func (s *Settler) observeErr(ctx context.Context, kind sqsworker.EventKind, d Delivery, outcome sqsworker.Outcome, err error) {
	ev := s.event(kind, d, s.cfg.Now())
	ev.Outcome, ev.Err = outcome, err
	s.cfg.Observer.Observe(ctx, ev)
}

func (s *Settler) event(kind sqsworker.EventKind, d Delivery, now time.Time) sqsworker.Event {
	ev := sqsworker.Event{Kind: kind, Host: s.cfg.Host, Message: d.Message, Time: now}
	if d.Message != nil && !d.Message.SentAt.IsZero() {
		ev.ReceiveLag = max(now.Sub(d.Message.SentAt), 0)
	}
	return ev
}
