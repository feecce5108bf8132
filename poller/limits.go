package poller

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit bounds how many messages of a job type (Config.JobTypeLimits) this server
// handles at once and per second, or how many of a queue's ([QueueConfig].Limit) it
// starts per second. The zero value
// is no limit. A limit holds for one server (one process); n processes together may
// start n times as many. For limits shared by every worker (per tenant, per API), see
// package fleetlimit: its middleware keeps them in the shared DynamoDB table.
type Limit struct {
	// MaxConcurrency specifies the most handler calls of the job type running at once
	// (Config.JobTypeLimits); 0 means no limit beyond Config.Concurrency. Negative values
	// are rejected, and so is any value in a queue's Limit: a queue's bound is
	// [QueueConfig].MaxSlots.
	MaxConcurrency int

	// RatePerSecond specifies the most handler starts per second, a token bucket
	// (golang.org/x/time/rate) refilled at this rate with room for RateBurst tokens; 0
	// means no limit. With RateBurst 1 (the default) handler starts are at least
	// 1/RatePerSecond apart, so no window of one second holds more than RatePerSecond
	// starts (a burst b allows b-1 more). The bucket is filled at 99% of the rate (see
	// rateHeadroom), so the few milliseconds between a token and the handler's first
	// line do not put RatePerSecond+1 starts into a one-second window; on a machine so
	// loaded that a goroutine waits longer than that to run, one late start can share a
	// window with the next RatePerSecond (the tokens themselves stay 1/RatePerSecond
	// apart). Negative values, NaN and infinity are rejected.
	RatePerSecond float64

	// RateBurst specifies the token bucket's size: how many handler starts may follow
	// one another at once after a quiet spell, and (for a queue's limit) how many
	// messages one ReceiveMessage call may ask for; if zero, defaults to 1. It requires
	// RatePerSecond. Negative values are rejected. A queue's receive waits for a token
	// that no received message has claimed, so with burst 1 each message is one receive
	// and the queue reaches RatePerSecond / (1 + RatePerSecond × the receive's round
	// trip): measured on LocalStack, 4.3 per second for a limit of 5 (a job type's limit,
	// acting after the receive, reached 4.95). A burst of 2 or more lets the bucket
	// fill during the receive.
	RateBurst int
}

// rateHeadroom is the share of Limit.RatePerSecond the token bucket is filled at. Token
// grants under load are 1/rate apart (see waitToken), so r+1 handler starts could fall
// into one second whenever the first start of a run lags its token more than the last
// one's; filling at 99% keeps r+1 grants 1% of a second (10 ms) further apart than one
// second, which absorbs the scheduling delay between a token and the handler's call.
const rateHeadroom = 0.99

// validate reports the problems of l, naming it as name.
func (l Limit) validate(name string) []error {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("poller: %s"+format, append([]any{name}, args...)...))
	}
	if l.MaxConcurrency < 0 {
		add(".MaxConcurrency %d is negative", l.MaxConcurrency)
	}
	if l.RatePerSecond < 0 || math.IsNaN(l.RatePerSecond) || math.IsInf(l.RatePerSecond, 0) {
		add(".RatePerSecond %v is not a finite number of jobs per second, 0 or more", l.RatePerSecond)
	}
	if l.RateBurst < 0 {
		add(".RateBurst %d is negative", l.RateBurst)
	}
	if l.RateBurst > 0 && l.RatePerSecond == 0 {
		add(".RateBurst %d is set without RatePerSecond", l.RateBurst)
	}
	return problems
}

// limiter enforces one Limit: a semaphore for MaxConcurrency, a token bucket for
// RatePerSecond. A nil limiter (no limit) lets everything through.
type limiter struct {
	concurrency chan struct{} // nil: no concurrency limit
	bucket      *rate.Limiter // nil: no rate limit
	// turn (one place) is held from when a message found a token free until it took
	// it: only the holder takes tokens, so the token it saw stays free for it.
	turn chan struct{}
}

// newLimiter returns the limiter of l, or nil when l limits nothing.
func newLimiter(l Limit) *limiter {
	if l.MaxConcurrency == 0 && l.RatePerSecond == 0 {
		return nil
	}
	lim := &limiter{}
	if l.MaxConcurrency > 0 {
		lim.concurrency = make(chan struct{}, l.MaxConcurrency)
	}
	if l.RatePerSecond > 0 {
		lim.bucket = rate.NewLimiter(rate.Limit(l.RatePerSecond*rateHeadroom), max(l.RateBurst, 1))
		lim.turn = make(chan struct{}, 1)
	}
	return lim
}

// pass is what a message holds of its limiters between enter and the handler's end.
type pass struct {
	mu     sync.Mutex // take runs in the handler's goroutine, leave in process's
	leaves []func()   // give the concurrency places back
	takes  []func()   // take the tokens found free, ending the turns
}

// take takes the tokens the message found free, in the handler's goroutine just before
// the handler is called, so that the time a token is taken is the handler's start
// (not a goroutine start earlier, which the scheduler may delay by milliseconds).
func (p *pass) take() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, take := range p.takes {
		take()
	}
	p.takes = nil
}

// leave gives the concurrency places back (when the handler returned) and, if take was
// not called, ends the turns without taking the tokens.
func (p *pass) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, end := range p.takes {
		end()
	}
	p.takes = nil
	for _, leave := range p.leaves {
		leave()
	}
	p.leaves = nil
}

// enter waits for a concurrency place, then for the turn and a free token, for one
// handler start; the pass's take takes the token. It returns ctx's error (or stop's:
// errStopped) when either ends first; then the pass holds nothing more.
func (l *limiter) enter(ctx context.Context, stop <-chan struct{}, p *pass) error {
	if l == nil {
		return nil
	}
	if l.concurrency != nil {
		select {
		case l.concurrency <- struct{}{}:
			p.leaves = append(p.leaves, func() { <-l.concurrency })
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return errStopped
		}
	}
	if l.bucket == nil {
		return nil
	}
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
	if err := waitFree(ctx, stop, l.bucket); err != nil {
		<-l.turn
		return err
	}
	p.takes = append(p.takes, func() { // called once: take and leave clear p.takes
		// The turn kept the token free since waitFree saw it.
		l.bucket.AllowN(time.Now(), 1)
		<-l.turn
	})
	return nil
}

// errStopped reports a wait given up because the server is shutting down.
var errStopped = fmt.Errorf("poller: shutting down")

// waitFree waits until bucket has a whole token free, unless ctx ends or stop closes
// first. Tokens are taken when they are used, not reserved ahead: a reservation fixes
// its time, so a waiter whose timer fired late would start closer than 1/rate to the
// next one; taken at the start, two starts are always at least 1/rate apart (the
// bucket holds at most the burst).
func waitFree(ctx context.Context, stop <-chan struct{}, bucket *rate.Limiter) error {
	for {
		now := time.Now()
		missing := 1 - bucket.TokensAt(now)
		if missing <= 0 {
			return nil
		}
		timer := time.NewTimer(max(time.Duration(missing/float64(bucket.Limit())*float64(time.Second)), time.Millisecond))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-stop:
			timer.Stop()
			return errStopped
		}
	}
}

// available returns how many tokens the queue's bucket will have free for new messages
// once the waiting ones (received, not started yet) took theirs, waiting until that is
// at least one. It returns 0 when stop closes first. A nil limiter or one without a
// rate has limit free.
func (l *limiter) available(stop <-chan struct{}, waiting func() int, limit int) int {
	if l == nil || l.bucket == nil {
		return limit
	}
	for {
		now := time.Now()
		free := l.bucket.TokensAt(now) - float64(waiting())
		if free >= 1 {
			return min(int(free), limit)
		}
		delay := time.Duration((1 - free) / float64(l.bucket.Limit()) * float64(time.Second))
		timer := time.NewTimer(max(delay, time.Millisecond))
		select {
		case <-timer.C:
		case <-stop:
			timer.Stop()
			return 0
		}
	}
}
