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
}

// Seconds is Visibility as SQS takes it: whole seconds, rounded up.
func (a Action) Seconds() int32 { return sqsx.VisibilitySeconds(a.Visibility) }

// Plan turns an outcome into the action both hosts carry out, for message received at
// receivedAt, at now. deadLetterSend is false when the dead-letter send is disabled.
func Plan(outcome sqsworker.Outcome, message *sqsworker.Message, receivedAt, now time.Time, backoff sqsworker.Backoff, deadLetterSend bool) Action {
	since := SinceReceive(message, receivedAt, now)
	action := Action{Outcome: outcome}
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
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
