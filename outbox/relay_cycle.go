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
	c, claimErr := r.store.claim(ctx, r.config.BatchSize, r.config.MinAge)
	if c == nil {
		return false, claimErr
	}
	r.cycles.Add(1)
	list := c.entries()
	if len(list) == 0 {
		c.release(ctx)
		return false, claimErr
	}
	entries := make([]Entry, len(list))
	preset := make([]outcome, len(list))
	for i, e := range list {
		entries[i] = e.Entry
		if e.damage != nil {
			preset[i] = outcome{refused: e.damage}
		}
	}
	r.crashAt("claimed")
	outcomes := publish(ctx, r.producer, entries, preset)
	r.crashAt("sent")
	now := time.Now()
	verdicts := make([]verdict, len(entries))
	for i, o := range outcomes {
		verdicts[i] = r.judge(entries[i], o, now)
	}
	if err := c.settle(ctx, verdicts); err != nil {
		return false, errors.Join(claimErr, err)
	}
	progress := 0
	for i, v := range verdicts {
		entry := &entries[i]
		switch v.kind {
		case verdictPublished:
			progress++
			r.published.Add(1)
			r.observe(ctx, Event{Kind: EventPublished, Entry: entry, MessageID: outcomes[i].messageID})
		case verdictFailed:
			progress++
			r.failed.Add(1)
			entry.Attempts, entry.FailedAt, entry.FailureReason = v.attempts, now, v.err.Error()
			r.observe(ctx, Event{Kind: EventFailed, Entry: entry, Err: v.err})
		case verdictRetry:
			r.retried.Add(1)
			entry.Attempts, entry.NextAttemptAt, entry.LastError = v.attempts, v.next, v.err.Error()
			r.observe(ctx, Event{Kind: EventRetry, Entry: entry, Err: v.err})
		case verdictHeld:
			r.retried.Add(1)
			r.observe(ctx, Event{Kind: EventRetry, Entry: entry, Err: v.err})
		}
	}
	return len(list) == r.config.BatchSize && progress > 0, claimErr
}

// judge decides what becomes of entry after outcome o: the one place of the attempt
// limit and the backoff.
func (r *Relay) judge(entry Entry, o outcome, now time.Time) verdict {
	v := verdict{id: entry.ID, attempts: entry.Attempts}
	switch {
	case o.published():
		v.kind = verdictPublished
	case o.held != nil:
		v.kind, v.err = verdictHeld, o.held
	case o.refused != nil:
		v.kind, v.err = verdictFailed, o.refused
		if !errors.Is(o.refused, ErrDamaged) {
			v.attempts++
		}
	default:
		v.attempts++
		if r.config.MaxAttempts > 0 && v.attempts >= r.config.MaxAttempts {
			v.kind, v.err = verdictFailed, fmt.Errorf("%w (attempt %d of %d): %w", ErrAttemptsExhausted, v.attempts, r.config.MaxAttempts, o.retry)
		} else {
			v.kind, v.err, v.delay = verdictRetry, o.retry, r.config.Backoff.Delay(v.attempts)
			v.next = now.Add(v.delay)
		}
	}
	return v
}
