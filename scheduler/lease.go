package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"
)

// leadership is what this replica knows of its lease, shared by the keeper (which
// takes, renews and releases it) and the ticker (which acts on it).
type leadership struct {
	mu         sync.Mutex
	leading    bool
	lease      Lease
	validUntil time.Time     // this replica's own clock: when it stops acting as leader
	changed    chan struct{} // closed and replaced when leading or the token changes
}

func newLeadership() *leadership { return &leadership{changed: make(chan struct{})} }

// get returns the lease, its local deadline and whether this replica holds it.
func (l *leadership) get() (Lease, time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease, l.validUntil, l.leading
}

// current returns the lease when this replica holds it and its deadline is after now.
func (l *leadership) current(now time.Time) (Lease, bool) {
	lease, validUntil, leading := l.get()
	return lease, leading && now.Before(validUntil)
}

// changes returns a channel closed at the next change of leader or token.
func (l *leadership) changes() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// set records a lease taken or renewed until validUntil.
func (l *leadership) set(lease Lease, validUntil time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	notify := !l.leading || l.lease.Token != lease.Token
	l.leading, l.lease, l.validUntil = true, lease, validUntil
	if notify {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// lose records that the lease with token is no longer held; false when it was not.
func (l *leadership) lose(token int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leading || l.lease.Token != token {
		return false
	}
	l.leading = false
	close(l.changed)
	l.changed = make(chan struct{})
	return true
}

// releaseTimeout bounds the release of the lease at shutdown.
const releaseTimeout = 5 * time.Second

// runKeeper takes the lease when it is free or lapsed, renews it every RenewInterval
// while this replica holds it, and gives it up when a renewal is refused or cannot be
// made before the lease's deadline. A failed read of the lease is retried after a
// backoff (see Scheduler.backoff), a lost race for it after RenewInterval. After stop it waits for the ticker (tickerDone), then releases
// the lease.
func (s *Scheduler) runKeeper(ctx context.Context, tickerDone <-chan struct{}) {
	var renewAt time.Time
	failures := 0 // failed reads of the lease in a row
	for {
		lease, validUntil, leading := s.lead.get()
		if leading {
			if !s.wait(time.Until(renewAt), s.lead.changes()) {
				break
			}
			if _, _, still := s.lead.get(); !still || time.Now().Before(renewAt) {
				continue // lost through a fenced claim
			}
			start := time.Now()
			renewed, err := s.store.renew(ctx, lease, start, s.config.LeaseDuration)
			switch {
			case err == nil:
				s.lead.set(renewed, start.Add(s.config.LeaseDuration))
				renewAt = start.Add(s.config.RenewInterval)
			case errors.Is(err, ErrFenced):
				s.loseLeadership(ctx, lease, "renewal refused", err)
			case !time.Now().Before(validUntil):
				s.loseLeadership(ctx, lease, "expired", err)
			default:
				s.logger.Warn("scheduler: renewing the lease failed; retrying", "error", err)
				renewAt = time.Now().Add(min(retryInterval, s.config.RenewInterval/2))
			}
			continue
		}
		held, found, err := s.store.readLease(ctx)
		if err != nil {
			failures++
			delay := s.backoff(failures, err)
			if errors.Is(err, ErrMalformedItem) { // never taken for a lease, nor overwritten
				s.logger.Error("scheduler: the lease item is not a lease; standing by", "retry_in", delay, "error", err)
			} else {
				s.logger.Warn("scheduler: reading the lease failed; retrying", "retry_in", delay, "error", err)
			}
			if !s.wait(delay, nil) {
				break
			}
			continue
		}
		failures = 0
		if now := time.Now(); found && held.Expiry.After(now) {
			// Held by another replica: look again when it lapses, or after RenewInterval.
			if !s.wait(min(held.Expiry.Sub(now)+time.Millisecond, s.config.RenewInterval), nil) {
				break
			}
			continue
		}
		if s.stopped() {
			break
		}
		var seen *Lease
		if found {
			seen = &held
		}
		start := time.Now()
		taken, err := s.store.acquire(ctx, s.config.Owner, seen, start, s.config.LeaseDuration)
		if errors.Is(err, ErrFenced) {
			// Another standby was first: read its lease after a pause, so that standbys
			// racing for a lease that keeps changing do not spin on it.
			s.logger.Debug("scheduler: another replica took the lease first", "seen_token", held.Token)
			if !s.wait(s.config.RenewInterval, nil) {
				break
			}
			continue
		}
		if err != nil {
			s.logger.Warn("scheduler: taking the lease failed; retrying", "error", err)
			if !s.wait(retryInterval, nil) {
				break
			}
			continue
		}
		s.lead.set(taken, start.Add(s.config.LeaseDuration))
		renewAt = start.Add(s.config.RenewInterval)
		s.logger.Info("scheduler: leadership gained", "token", taken.Token)
		s.emit(ctx, Event{Kind: EventLeadershipGained, Token: taken.Token})
	}
	<-tickerDone
	if lease, _, leading := s.lead.get(); leading {
		releaseCtx, cancel := context.WithTimeout(ctx, releaseTimeout)
		err := s.store.release(releaseCtx, lease, time.Now())
		cancel()
		if err != nil {
			s.logger.Warn("scheduler: releasing the lease failed; it lapses after LeaseDuration", "error", err)
		}
		s.loseLeadership(ctx, lease, "shutdown", err)
	}
}

// loseLeadership records the loss of the lease with lease's token (once) and says so.
func (s *Scheduler) loseLeadership(ctx context.Context, lease Lease, reason string, err error) {
	if !s.lead.lose(lease.Token) {
		return
	}
	s.logger.Info("scheduler: leadership lost", "token", lease.Token, "reason", reason, "error", err)
	s.emit(ctx, Event{Kind: EventLeadershipLost, Token: lease.Token, Reason: reason, Err: err})
}

// backoff is the pause after the failures-th failure in a row of a read or a pass: 1 s,
// doubling, up to RenewInterval (how often a standby looks anyway), or up to
// maxRetryInterval (1 min) for an item that is not the scheduler's, which only a person
// can fix.
func (s *Scheduler) backoff(failures int, err error) time.Duration {
	limit := max(retryInterval, s.config.RenewInterval)
	if errors.Is(err, ErrMalformedItem) {
		limit = maxRetryInterval
	}
	return min(retryInterval<<min(max(failures-1, 0), 6), limit)
}
