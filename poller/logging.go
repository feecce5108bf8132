package poller

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
)

// messageLogger returns logger with the attributes every per-message log carries
// (queue is already on logger). Bodies are never logged.
func messageLogger(logger *slog.Logger, message *sqsworker.Message) *slog.Logger {
	return logger.With("message_id", message.ID, "receive_count", message.ReceiveCount)
}

// errorCode returns the SQS error code of err (for example "ReceiptHandleIsInvalid"),
// or "" when err is not an API error.
func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}

// logLimiter lets a repeated error through at most once per interval and counts what
// it held back, so an outage does not flood the logs (asynq's errLogLimiter).
type logLimiter struct {
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now, and how many occurrences were held back since the
// last one logged.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		return false, 0
	}
	suppressed, l.suppressed, l.last = l.suppressed, 0, now
	return true, suppressed
}
