package sqsworker

import (
	"errors"
	"time"
)

// OutcomeKind is what a host does with a message after its handler returned.
type OutcomeKind int

const (
	// OutcomeDelete deletes the message: the handler succeeded.
	OutcomeDelete OutcomeKind = iota
	// OutcomeDeadLetter sends the message to the dead-letter queue now, then deletes it.
	OutcomeDeadLetter
	// OutcomeRetryAfter makes the message visible again after Outcome.Delay.
	OutcomeRetryAfter
	// OutcomeDefer is OutcomeRetryAfter counted as deferred, not failed.
	OutcomeDefer
	// OutcomeRetry makes the message visible again after the backoff policy's delay.
	OutcomeRetry
	// OutcomeCancelled deletes the message of a cancelled job ([Cancelled]): it is not
	// retried, not dead-lettered, and counts as neither failed nor deferred.
	OutcomeCancelled
)

// String returns the kind's name as used in logs ("delete", "dead-letter", ...).
func (k OutcomeKind) String() string {
	switch k {
	case OutcomeDelete:
		return "delete"
	case OutcomeDeadLetter:
		return "dead-letter"
	case OutcomeRetryAfter:
		return "retry-after"
	case OutcomeDefer:
		return "defer"
	case OutcomeRetry:
		return "retry"
	case OutcomeCancelled:
		return "cancelled"
	}
	return "unknown"
}

// Outcome is the decision [Classify] takes for one handler result.
type Outcome struct {
	Kind OutcomeKind
	// Delay is the requested visibility delay for OutcomeRetryAfter and OutcomeDefer,
	// never negative. Zero otherwise.
	Delay time.Duration
	// Reason names the failure class: the PermanentError's Reason, "Panic",
	// "HandlerError", the DeferError's reason, or "Cancelled". Empty for OutcomeDelete.
	Reason string
	// Err is the handler's error (nil for OutcomeDelete).
	Err error
}

// Failed reports whether the outcome counts as a failed attempt (everything but delete,
// defer and cancelled).
func (o Outcome) Failed() bool {
	return o.Kind != OutcomeDelete && o.Kind != OutcomeDefer && o.Kind != OutcomeCancelled
}

// Classify decides a message's fate from its handler's error. It is the one place both
// hosts take that decision. Wrapped errors are looked through with errors.As and
// errors.Is. Precedence when an error wraps several markers: cancelled, then permanent,
// then defer, then retry-after; everything else (a panic included) is an ordinary retry.
func Classify(err error) Outcome {
	if err == nil {
		return Outcome{Kind: OutcomeDelete}
	}
	if errors.Is(err, ErrCancelled) {
		return Outcome{Kind: OutcomeCancelled, Reason: ReasonCancelled, Err: err}
	}
	if permanent, ok := errors.AsType[*PermanentError](err); ok {
		return Outcome{Kind: OutcomeDeadLetter, Reason: permanent.Reason, Err: err}
	}
	if errors.Is(err, ErrPermanent) {
		return Outcome{Kind: OutcomeDeadLetter, Reason: "PermanentError", Err: err}
	}
	if deferral, ok := errors.AsType[*DeferError](err); ok {
		return Outcome{Kind: OutcomeDefer, Delay: max(deferral.Delay, 0), Reason: deferral.Reason, Err: err}
	}
	if retry, ok := errors.AsType[*RetryAfterError](err); ok {
		return Outcome{Kind: OutcomeRetryAfter, Delay: max(retry.Delay, 0), Reason: "RetryAfter", Err: err}
	}
	if IsPanicError(err) {
		return Outcome{Kind: OutcomeRetry, Reason: "Panic", Err: err}
	}
	return Outcome{Kind: OutcomeRetry, Reason: "HandlerError", Err: err}
}
