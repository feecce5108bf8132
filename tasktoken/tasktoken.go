package tasktoken

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// New returns the task-token middleware (see the package documentation) for cfg, or an
// error naming every missing or invalid setting. Wrap each job type a state machine sends
// with it, inside any idempotency middleware, so a job whose idempotency record says done
// is not answered twice.
func New(cfg Config) (sqsworker.Middleware, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &middleware{cfg: cfg, maxReceiveCounts: make(map[string]int)}
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			return m.handle(ctx, message, next)
		})
	}, nil
}

type middleware struct {
	cfg Config

	mu sync.Mutex
	// maxReceiveCounts caches each queue's redrive policy maxReceiveCount (0: none), read
	// through Config.Queues.
	maxReceiveCounts map[string]int
}

// handle runs one task-token job.
func (m *middleware) handle(ctx context.Context, message *sqsworker.Message, next sqsworker.Handler) error {
	token, job, err := m.cfg.Token.take(message)
	if err != nil {
		return err
	}
	logger := m.cfg.Logger.With("message_id", message.ID, "receive_count", message.ReceiveCount)
	// A redelivery: is the task still open? One whose task was answered (its delete
	// lost, or the worker stopped after answering) or timed out ends here. A first
	// delivery skips the call: its task was opened moments ago (and LocalStack refuses a
	// heartbeat in the moment between the send and the task's start).
	if message.ReceiveCount > 1 {
		if err := m.send(ctx, token); err != nil {
			if isClosed(err) {
				logger.Info("tasktoken: the task is already closed; the message is finished without running", "code", errorCode(err))
				return nil
			}
			return fmt.Errorf("tasktoken: SendTaskHeartbeat before the handler: %w", err)
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	holder := &output{}
	runCtx = context.WithValue(runCtx, outputKey{}, holder)
	var closedOnce sync.Once
	closedWhileRunning := false
	closed := func() {
		closedOnce.Do(func() {
			closedWhileRunning = true
			cancel(ErrTaskClosed)
		})
	}
	var beat *heartbeat
	if m.cfg.HeartbeatInterval > 0 {
		beat = m.startHeartbeat(ctx, token, logger, closed)
	}
	handlerErr := func() error {
		defer beat.halt() // also when the handler panics
		return next.Handle(runCtx, job)
	}()
	// halt has returned: the heartbeat loop is gone, closedWhileRunning is settled.
	if closedWhileRunning {
		logger.Info("tasktoken: the task closed while the handler ran; the message is finished without retry", "handler_error", handlerErr)
		return nil
	}
	return m.answer(ctx, logger, message, token, holder, handlerErr)
}

// answer reports the handler's outcome to Step Functions, or leaves a retryable failure
// to the queue, and returns what the host settles the message with.
func (m *middleware) answer(ctx context.Context, logger *slog.Logger, message *sqsworker.Message, token string, holder *output, handlerErr error) error {
	if handlerErr == nil {
		result := holder.result()
		if err := checkOutput(result); err != nil {
			return m.fail(ctx, logger, token, ErrorOutputTooLarge, err, err)
		}
		callCtx, cancel := m.callContext(ctx)
		defer cancel()
		_, err := m.cfg.API.SendTaskSuccess(callCtx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(result))})
		switch {
		case err == nil:
			return nil
		case isClosed(err):
			logger.Info("tasktoken: the task closed before its success was reported; the message is finished", "code", errorCode(err))
			return nil
		default:
			logger.Warn("tasktoken: SendTaskSuccess failed; the message is retried", "error", err)
			return fmt.Errorf("tasktoken: SendTaskSuccess: %w", err)
		}
	}
	outcome := sqsworker.Classify(handlerErr)
	if outcome.Kind == sqsworker.OutcomeDeadLetter {
		return m.fail(ctx, logger, token, outcome.Reason, handlerErr, handlerErr)
	}
	last, err := m.lastAttempt(ctx, message)
	if err != nil {
		logger.Warn("tasktoken: cannot read the queue's redrive policy to tell the last attempt; the message is retried", "error", err)
		return handlerErr
	}
	if !last {
		return handlerErr
	}
	return m.fail(ctx, logger, token, ErrorRetriesExhausted, handlerErr, handlerErr)
}

// fail sends SendTaskFailure with name and cause's text. Once sent (or the task found
// closed) the message is finished; when the call fails, it returns an error wrapping
// handlerErr's outcome as a retry, so a later attempt answers.
func (m *middleware) fail(ctx context.Context, logger *slog.Logger, token, name string, cause, handlerErr error) error {
	callCtx, cancel := m.callContext(ctx)
	defer cancel()
	_, err := m.cfg.API.SendTaskFailure(callCtx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(token),
		Error:     aws.String(truncate(name, MaxErrorLength)),
		Cause:     aws.String(truncate(cause.Error(), MaxCauseLength)),
	})
	switch {
	case err == nil:
		logger.Info("tasktoken: task failure reported to Step Functions; the message is finished", "error_name", name, "cause", cause)
		return nil
	case isClosed(err):
		logger.Info("tasktoken: the task closed before its failure was reported; the message is finished", "code", errorCode(err), "error_name", name)
		return nil
	default:
		logger.Warn("tasktoken: SendTaskFailure failed; the message is retried", "error", err, "error_name", name)
		return fmt.Errorf("tasktoken: SendTaskFailure (%s) failed: %w (handler: %v)", name, err, handlerErr)
	}
}

// send sends one SendTaskHeartbeat.
func (m *middleware) send(ctx context.Context, token string) error {
	callCtx, cancel := m.callContext(ctx)
	defer cancel()
	_, err := m.cfg.API.SendTaskHeartbeat(callCtx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return err
}

// callContext bounds one call by CallTimeout, without the handler's cancellation: an
// answer is sent even when the handler's deadline has passed.
func (m *middleware) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CallTimeout)
}

// lastAttempt reports whether message's receive count has reached its queue's
// maxReceiveCount (Config.MaxReceiveCount, else the queue's redrive policy).
func (m *middleware) lastAttempt(ctx context.Context, message *sqsworker.Message) (bool, error) {
	limit := m.cfg.MaxReceiveCount
	if limit == 0 {
		var err error
		if limit, err = m.queueMaxReceiveCount(ctx, message.QueueURL); err != nil {
			return false, err
		}
	}
	return limit > 0 && message.ReceiveCount >= limit, nil
}

// queueMaxReceiveCount reads (once) the maxReceiveCount of queueURL's redrive policy.
func (m *middleware) queueMaxReceiveCount(ctx context.Context, queueURL string) (int, error) {
	m.mu.Lock()
	limit, ok := m.maxReceiveCounts[queueURL]
	m.mu.Unlock()
	if ok {
		return limit, nil
	}
	callCtx, cancel := m.callContext(ctx)
	defer cancel()
	queue, err := sqsinfo.LoadQueue(callCtx, m.cfg.Queues, queueURL)
	if err != nil {
		return 0, err
	}
	if queue.RedrivePolicy != nil {
		limit = queue.RedrivePolicy.MaxReceiveCount
	}
	m.mu.Lock()
	m.maxReceiveCounts[queueURL] = limit
	m.mu.Unlock()
	return limit, nil
}

// isClosed reports whether err is Step Functions saying the token can no longer be
// answered: TaskTimedOut (the task timed out or was answered), TaskDoesNotExist (its
// execution is gone) or InvalidToken (a token it cannot read; LocalStack's answer for any
// token of an ended execution).
func isClosed(err error) bool {
	var timedOut *types.TaskTimedOut
	var missing *types.TaskDoesNotExist
	var invalid *types.InvalidToken
	return errors.As(err, &timedOut) || errors.As(err, &missing) || errors.As(err, &invalid)
}

func errorCode(err error) string {
	var timedOut *types.TaskTimedOut
	var missing *types.TaskDoesNotExist
	var invalid *types.InvalidToken
	switch {
	case errors.As(err, &timedOut):
		return timedOut.ErrorCode()
	case errors.As(err, &missing):
		return missing.ErrorCode()
	case errors.As(err, &invalid):
		return invalid.ErrorCode()
	}
	return ""
}
