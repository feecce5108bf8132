package sqsworker

import (
	"errors"
	"fmt"
	"time"
)

// ErrInterrupted matches (with errors.Is) the cause of a handler context that a host
// ended because it is going away, not because the job failed: the poller's drain
// deadline at shutdown (poller.ErrDrainTimeout) and the Lambda adapter's invocation
// deadline (lambda.ErrDeadline). The host releases such a message, and the idempotency
// middleware records the interruption, so it does not count toward the job type's
// attempts ([Message.Attempt], [JobMaxAttempts]).
var ErrInterrupted = errors.New("sqsworker: interrupted by the host (shutdown or deadline)")

// ErrPermanent matches (with errors.Is) every error made by [Permanent]: a failure that
// retrying cannot fix, so the message goes to the dead-letter queue at once.
var ErrPermanent = errors.New("sqsworker: permanent failure")

// PermanentError marks a failure that must not be retried. Hosts send the message to the
// dead-letter queue with Reason in its "failure-reason" attribute, then delete it.
type PermanentError struct {
	// Reason is a short, stable name for the failure class, for example "MalformedBody"
	// or "IdempotencyPayloadMismatch". It becomes the failure-reason attribute.
	Reason string
	// Err is the underlying error; its text becomes the failure-error attribute.
	Err error
}

// Permanent wraps err as a [*PermanentError] with the given reason. An empty reason
// becomes "PermanentError"; a nil err becomes an error saying just the reason.
func Permanent(reason string, err error) error {
	if reason == "" {
		reason = "PermanentError"
	}
	if err == nil {
		err = errors.New(reason)
	}
	return &PermanentError{Reason: reason, Err: err}
}

// Error returns "permanent failure (Reason): Err".
func (e *PermanentError) Error() string {
	return fmt.Sprintf("permanent failure (%s): %v", e.Reason, e.Err)
}

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Is reports true for [ErrPermanent].
func (e *PermanentError) Is(target error) bool { return target == ErrPermanent }

// RetryAfterError asks the host to make the message visible again after Delay instead of
// the backoff policy's delay. The delay is clamped to SQS's visibility limits (0 to 12 h
// since the receive) and rounded up to whole seconds.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

// RetryAfter returns a [*RetryAfterError] that retries the message after delay. err may be nil.
func RetryAfter(delay time.Duration, err error) error {
	return &RetryAfterError{Delay: delay, Err: err}
}

// Error describes the delay and the cause.
func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

// Unwrap returns the underlying error, if any.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// DeferError asks the host to hand the message out again after Delay and to count it as
// deferred, not failed: nothing went wrong, the work is simply not due yet (for example a
// duplicate delivery whose original is still running under an idempotency lease).
type DeferError struct {
	Delay  time.Duration
	Reason string
}

// Defer returns a [*DeferError].
func Defer(delay time.Duration, reason string) error {
	return &DeferError{Delay: delay, Reason: reason}
}

// Error describes the deferral.
func (e *DeferError) Error() string {
	return fmt.Sprintf("deferred for %s: %s", e.Delay, e.Reason)
}
