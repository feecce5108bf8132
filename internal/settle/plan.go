package settle

import (
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// Action is what a host does with a message after its handler returned.
type Action struct {
	// Outcome is Classify's decision the action carries out.
	Outcome sqsworker.Outcome
	// DeadLetter: send the message to the dead-letter queue first; only when that
	// succeeded, finish it (Delete). When it fails, reschedule after Visibility.
	DeadLetter bool
	// Delete: the message is done with (after the dead-letter send, when DeadLetter).
	Delete bool
	// Visibility is the visibility timeout to set when the message is not finished (or
	// the dead-letter send failed): clamped to SQS's limit, at most 12 h.
	Visibility time.Duration
	// Exhausted: the failed attempt was the message's last (see [Exhaust]); it is sent
	// to the dead-letter queue with reason sqsworker.ReasonRetriesExhausted.
	Exhausted bool
}

// DeadLetterOutcome is the outcome the dead-letter copy carries: Outcome, or for an
// exhausted message reason sqsworker.ReasonRetriesExhausted with the last attempt's
// error.
func (a Action) DeadLetterOutcome() sqsworker.Outcome {
	if a.Exhausted {
		return sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: sqsworker.ReasonRetriesExhausted, Err: a.Outcome.Err}
	}
	return a.Outcome
}

// Seconds is Visibility as SQS takes it: whole seconds, rounded up.
func (a Action) Seconds() int32 { return sqsx.VisibilitySeconds(a.Visibility) }

// Plan turns an outcome into the action both hosts carry out, for message received at
// receivedAt, at now. deadLetterSend is false when the dead-letter send is disabled.
func Plan(outcome sqsworker.Outcome, message *sqsworker.Message, receivedAt, now time.Time, backoff sqsworker.Backoff, deadLetterSend bool) Action {
	since := SinceReceive(message, receivedAt, now)
	action := Action{Outcome: outcome}
	switch outcome.Kind {
	case sqsworker.OutcomeDelete, sqsworker.OutcomeCancelled:
		action.Delete = true
	case sqsworker.OutcomeDeadLetter:
		action.DeadLetter, action.Delete = deadLetterSend, deadLetterSend
		action.Visibility = sqsx.ClampVisibility(backoff.Delay(message.ReceiveCount), since)
	case sqsworker.OutcomeRetryAfter, sqsworker.OutcomeDefer:
		action.Visibility = sqsx.ClampVisibility(outcome.Delay, since)
	default:
		action.Visibility = sqsx.ClampVisibility(backoff.Delay(message.ReceiveCount), since)
	}
	return action
}

// SinceReceive is how long the message has been received, for the 12-hour visibility
// limit: since its first receive when SQS reported it, and never less than since this
// delivery's receive (receivedAt; zero when unknown).
func SinceReceive(message *sqsworker.Message, receivedAt, now time.Time) time.Duration {
	since := message.SinceFirstReceive(now)
	if !receivedAt.IsZero() {
		since = max(since, now.Sub(receivedAt))
	}
	return max(since, 0)
}

// Exhaust turns the action of an attempt that would make the message visible again (a
// retry, retry-after or deferral) into a dead-letter send when the attempt was the
// message's last: its receive count has reached maxReceiveCount, the queue's redrive
// policy (0: no policy, or unknown), so SQS would move it to the dead-letter queue at
// its next receive, without a reason; or the failure carries its job type's attempt
// limit (sqsworker.AttemptLimit, from sqsworker.JobMaxAttempts) and the message's
// Attempt has reached it. The copy then carries reason sqsworker.ReasonRetriesExhausted
// and the attempt's error (Action.DeadLetterOutcome). The visibility is kept: it applies
// if the send fails, and the redrive policy moves the message as before. Without
// deadLetterSend the action is unchanged.
func Exhaust(action Action, message *sqsworker.Message, maxReceiveCount int, deadLetterSend bool) Action {
	if !deadLetterSend || !Reschedules(action.Outcome) {
		return action
	}
	last := maxReceiveCount >= 1 && message.ReceiveCount >= maxReceiveCount
	if limit, ok := sqsworker.AttemptLimit(action.Outcome.Err); ok && message.Attempt() >= limit {
		last = true
	}
	if !last {
		return action
	}
	action.DeadLetter, action.Delete, action.Exhausted = true, true, true
	return action
}

// Reschedules reports whether the outcome makes the message visible again later: a
// retry, a retry-after or a deferral.
func Reschedules(outcome sqsworker.Outcome) bool {
	switch outcome.Kind {
	case sqsworker.OutcomeRetry, sqsworker.OutcomeRetryAfter, sqsworker.OutcomeDefer:
		return true
	}
	return false
}
