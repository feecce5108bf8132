package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/envelope"
)

// Defaults of [MiddlewareConfig].
const (
	// DefaultCheckInterval is MiddlewareConfig.CheckInterval when zero: the poller's
	// heartbeat interval on a queue with the default 30 s visibility timeout.
	DefaultCheckInterval = 10 * time.Second
	// DefaultProgressInterval is MiddlewareConfig.ProgressInterval when zero.
	DefaultProgressInterval = 5 * time.Second
	// defaultStoreTimeout bounds the end's write, which runs after the handler's context
	// may have ended.
	defaultStoreTimeout = 5 * time.Second
)

// errCancelRequested is the cause of a running handler's context cancelled by
// [Store.Cancel].
var errCancelRequested = fmt.Errorf("jobs: cancel requested: %w", sqsworker.ErrCancelled)

// MiddlewareConfig configures [Store.Middleware]. The zero value takes the defaults.
type MiddlewareConfig struct {
	// CheckInterval is how often a running job's record is read for a cancellation
	// request (one eventually consistent GetItem each); if zero, DefaultCheckInterval.
	// Set it to the poller's HeartbeatInterval to cancel within one heartbeat; on
	// Lambda the same interval applies.
	CheckInterval time.Duration
	// ProgressInterval is the least time between two progress writes of one job; if
	// zero, DefaultProgressInterval.
	ProgressInterval time.Duration
	// MaxReceiveCount is the queue's redrive policy maxReceiveCount: an attempt that
	// fails at that receive count is the last, and the job is recorded as failed (the
	// hosts send it to the dead-letter queue themselves, reason RetriesExhausted). Zero:
	// unknown, such an attempt is recorded as retrying.
	MaxReceiveCount int
	// Logger receives the record's write failures (Warn); if nil, slog.Default().
	Logger *slog.Logger
	// Now tells the time for the progress rate limit; if nil, time.Now.
	Now func() time.Time
	// InIdempotencyRecord says the handler runs inside the idempotency middleware
	// (package idempotency, applied before this one), whose record holds the job's
	// state and result: the middleware then writes nothing on the hot path. Before the
	// handler it reads the job's own record for a cancellation request (one eventually
	// consistent GetItem, no write); it writes only progress, and a cancellation's end.
	// Failed attempts are not recorded (the idempotency middleware deletes its record on
	// failure). Give the Store Config.Idempotency to read such records.
	InIdempotencyRecord bool
}

// Middleware returns a [sqsworker.Middleware] that records each job it runs (a message
// with a job id; others pass through unrecorded): the start before the handler, the end
// after it, with the state the outcome gives, the error text, the result
// ([SetResult]) and the last progress ([Progress]). A job cancelled before it started
// does not run: the middleware returns a [sqsworker.Cancelled] error, which the host
// carries out as a delete. While the handler runs, its record is read every
// CheckInterval; a cancellation request cancels the handler's context (its cause
// matches [sqsworker.ErrCancelled]) and the job ends as cancelled when the handler then
// returns an error. A handler that returns nil all the same (it ignored its context, or
// finished as the request came) has done its work: the job ends as succeeded, as an
// idempotency middleware inside has completed its record and the batches middleware
// outside counts it (package batches), so the three agree.
//
// A failed start write is returned (the job is retried: its cancellation could not be
// checked); a failed end write is logged only, the job's outcome stands.
//
// Order: inside sqsworker.DelayMiddleware and the fleetlimit middleware (their hops
// return nil, which would be recorded as a success) and inside the batches middleware
// (which must see a cancelled job's Cancelled outcome to count its end); outside the
// idempotency middleware, or inside it with MiddlewareConfig.InIdempotencyRecord.
func (s *Store) Middleware(config MiddlewareConfig) sqsworker.Middleware {
	if config.CheckInterval <= 0 {
		config.CheckInterval = DefaultCheckInterval
	}
	if config.ProgressInterval <= 0 {
		config.ProgressInterval = DefaultProgressInterval
	}
	if config.Logger == nil {
		config.Logger = slog.Default()
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			return s.handle(ctx, config, next, message)
		})
	}
}

func (s *Store) handle(ctx context.Context, config MiddlewareConfig, next sqsworker.Handler, message *sqsworker.Message) error {
	id := message.JobID()
	if id == "" {
		return next.Handle(ctx, message)
	}
	logger := config.Logger.With(slog.String("job_id", id), slog.String("message_id", message.ID))
	if config.InIdempotencyRecord {
		return s.handleIdempotent(ctx, config, next, message, logger)
	}
	r, started, err := s.start(ctx, id, message.JobType(), message.QueueURL, payloadKey(message))
	if err != nil {
		logger.WarnContext(ctx, "jobs: recording the start failed; the job is retried", slog.Any("error", err))
		return err
	}
	if !started {
		if !r.State.Finished() { // cancelled while an earlier attempt ran, which then crashed
			s.end(ctx, logger, id, StateCancelled, "", nil, nil, nil)
		}
		return sqsworker.Cancelled(fmt.Errorf("job %s was cancelled before it started", id))
	}
	a, cancelled, handlerErr := s.call(ctx, config, next, message, logger)
	result, ref, progress := a.outcome()
	if cancelled && handlerErr != nil {
		s.end(ctx, logger, id, StateCancelled, errorText(handlerErr), nil, nil, progress)
		return sqsworker.Cancelled(fmt.Errorf("job %s cancelled while running: %w", id, errOrCanceled(handlerErr)))
	}
	state := s.state(ctx, config, message, handlerErr)
	s.end(ctx, logger, id, state, errorText(handlerErr), result, ref, progress)
	return handlerErr
}

// handleIdempotent runs a job whose state the idempotency record holds
// (MiddlewareConfig.InIdempotencyRecord).
func (s *Store) handleIdempotent(ctx context.Context, config MiddlewareConfig, next sqsworker.Handler, message *sqsworker.Message, logger *slog.Logger) error {
	id := message.JobID()
	cancelled, err := s.cancelledBeforeStart(ctx, id)
	if err != nil {
		logger.WarnContext(ctx, "jobs: reading the cancellation request failed; the job is retried", slog.Any("error", err))
		return err
	}
	if cancelled {
		return sqsworker.Cancelled(fmt.Errorf("job %s was cancelled before it started", id))
	}
	a, cancelled, handlerErr := s.call(ctx, config, next, message, logger)
	_, _, progress := a.outcome()
	switch {
	case cancelled && handlerErr != nil:
		s.end(ctx, logger, id, StateCancelled, errorText(handlerErr), nil, nil, progress)
		return sqsworker.Cancelled(fmt.Errorf("job %s cancelled while running: %w", id, errOrCanceled(handlerErr)))
	case len(progress) > 0: // the last progress the rate limit held back
		storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultStoreTimeout)
		defer cancel()
		if err := s.progress(storeCtx, id, progress); err != nil {
			logger.WarnContext(ctx, "jobs: recording the last progress failed", slog.Any("error", err))
		}
	}
	return handlerErr
}

// call runs the handler with the attempt in its context, watching for a cancellation
// request, and reports whether one cancelled it.
func (s *Store) call(ctx context.Context, config MiddlewareConfig, next sqsworker.Handler, message *sqsworker.Message, logger *slog.Logger) (*attempt, bool, error) {
	a := &attempt{store: s, id: message.JobID(), interval: config.ProgressInterval, now: config.Now}
	handlerCtx, cancel := context.WithCancelCause(context.WithValue(ctx, attemptKey{}, a))
	defer cancel(nil)
	stop := s.watch(handlerCtx, a.id, config.CheckInterval, cancel, logger)
	defer stop() // a panic passes on; the next attempt's start overwrites the record
	handlerErr := next.Handle(handlerCtx, message)
	stop()
	return a, errors.Is(context.Cause(handlerCtx), errCancelRequested), handlerErr
}

// state is the state an attempt's outcome leaves the job in.
func (s *Store) state(ctx context.Context, config MiddlewareConfig, message *sqsworker.Message, handlerErr error) State {
	outcome := sqsworker.Classify(handlerErr)
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
		return StateSucceeded
	case sqsworker.OutcomeCancelled:
		return StateCancelled
	case sqsworker.OutcomeDeadLetter:
		return StateDeadLettered
	case sqsworker.OutcomeDefer:
		return StateRetrying
	}
	if config.MaxReceiveCount > 0 && message.ReceiveCount >= config.MaxReceiveCount {
		return StateFailed // retries exhausted
	}
	if ctx.Err() != nil {
		return StateInterrupted // the host's context ended: shutdown or the invocation's deadline
	}
	return StateRetrying
}

// end writes the attempt's end, logging a failure.
func (s *Store) end(ctx context.Context, logger *slog.Logger, id string, state State, errorText string, result []byte, ref *ResultRef, progress []byte) {
	storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultStoreTimeout)
	defer cancel()
	if err := s.finish(storeCtx, id, state, errorText, result, ref, progress); err != nil {
		logger.WarnContext(ctx, "jobs: recording the end failed; the record shows the job running", slog.String("state", string(state)), slog.Any("error", err))
	}
}

// watch reads the record every interval until stop is called, and cancels the
// handler's context with errCancelRequested when it asks for cancellation. stop waits
// for the goroutine and may be called more than once.
func (s *Store) watch(ctx context.Context, id string, interval time.Duration, cancel context.CancelCauseFunc, logger *slog.Logger) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			requested, err := s.cancelRequested(ctx, id)
			if err != nil {
				logger.WarnContext(ctx, "jobs: reading the cancellation request failed", slog.Any("error", err))
				continue
			}
			if requested {
				logger.InfoContext(ctx, "jobs: cancel requested; cancelling the handler's context")
				cancel(errCancelRequested)
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errOrCanceled(err error) error {
	if err == nil {
		return context.Canceled
	}
	return err
}

// payloadKey returns the KMS key ARN an encrypted job's envelope names (package
// encrypt), "malformed" for an envelope that does not parse, or "" for a job in clear.
func payloadKey(message *sqsworker.Message) string {
	value, ok := message.StringAttribute(sqsworker.AttributeEncryption)
	if !ok {
		return ""
	}
	header, err := envelope.ParseHeader(value)
	if err != nil {
		return PayloadKeyMalformed
	}
	return header.KeyARN
}
