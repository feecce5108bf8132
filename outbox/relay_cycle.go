package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// cycle claims, publishes and settles one batch. full reports a batch that took all of
// BatchSize with progress made (more may be waiting). A store error that still left a
// claim is returned after that claim was published and settled.
func (r *Relay) cycle(ctx context.Context) (full bool, err error) {
	c, claimErr := r.store.Claim(ctx, r.config.BatchSize, r.config.MinAge)
	if c == nil {
		return false, claimErr
	}
	r.cycles.Add(1)
	list := c.Entries()
	if len(list) == 0 {
		c.Release(ctx)
		return false, claimErr
	}
	entries := make([]Entry, len(list))
	preset := make([]Outcome, len(list))
	for i, e := range list {
		entries[i] = e.Entry
		if e.Damage != nil {
			preset[i] = Outcome{Refused: e.Damage}
		}
	}
	outcomes := PublishInFlight(ctx, r.producer, r.config.InFlight, entries, preset)
	now := time.Now()
	verdicts := make([]Verdict, len(entries))
	for i, o := range outcomes {
		verdicts[i] = r.judge(entries[i], o, now)
	}
	if err := c.Settle(ctx, verdicts); err != nil {
		return false, errors.Join(claimErr, err)
	}
	progress := 0
	for i, v := range verdicts {
		entry := &entries[i]
		switch v.Kind {
		case VerdictPublished:
			progress++
			r.published.Add(1)
			r.observe(ctx, Event{Kind: EventPublished, Entry: entry, MessageID: outcomes[i].MessageID})
		case VerdictFailed:
			progress++
			r.failed.Add(1)
			entry.Attempts, entry.FailedAt, entry.FailureReason = v.Attempts, now, v.Err.Error()
			r.observe(ctx, Event{Kind: EventFailed, Entry: entry, Err: v.Err})
		case VerdictRetry:
			r.retried.Add(1)
			entry.Attempts, entry.NextAttemptAt, entry.LastError = v.Attempts, v.Next, v.Err.Error()
			r.observe(ctx, Event{Kind: EventRetry, Entry: entry, Err: v.Err})
		case VerdictHeld:
			r.retried.Add(1)
			r.observe(ctx, Event{Kind: EventRetry, Entry: entry, Err: v.Err})
		}
	}
	return len(list) == r.config.BatchSize && progress > 0, claimErr
}

// judge decides what becomes of entry after outcome o: the one place of the attempt
// limit and the backoff.
func (r *Relay) judge(entry Entry, o Outcome, now time.Time) Verdict {
	v := Verdict{ID: entry.ID, Attempts: entry.Attempts}
	switch {
	case o.Published():
		v.Kind = VerdictPublished
	case o.Held != nil:
		v.Kind, v.Err = VerdictHeld, o.Held
	case o.Refused != nil:
		v.Kind, v.Err = VerdictFailed, o.Refused
		if !errors.Is(o.Refused, ErrDamaged) {
			v.Attempts++
		}
	default:
		v.Attempts++
		if r.config.MaxAttempts > 0 && v.Attempts >= r.config.MaxAttempts {
			v.Kind, v.Err = VerdictFailed, fmt.Errorf("%w (attempt %d of %d): %w", ErrAttemptsExhausted, v.Attempts, r.config.MaxAttempts, o.Retry)
		} else {
			v.Kind, v.Err, v.Delay = VerdictRetry, o.Retry, r.config.Backoff.Delay(v.Attempts)
			v.Next = now.Add(v.Delay)
		}
	}
	return v
}
