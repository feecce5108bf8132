package fleetlimit

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker"
)

// Middleware limits the handler: for a message whose key (Config.Key) is not empty, it
// first takes a rate start ([Limiter.Reserve]) and waits for it, holding nothing else;
// then it takes a permit ([Limiter.Acquire]), renews it every Config.Lease/3 while the
// handler runs and releases it when the handler returns. A job therefore never holds a
// permit while it waits for a rate start. A handler whose permit is lost (taken by
// another holder after renewals failed) has its context cancelled with cause
// [ErrPermitLost]; the permit's fencing token is in the handler's context
// ([PermitFromContext]) for downstreams that can refuse stale holders.
//
// A message that finds no permit free, or no rate start within Config.MaxWait, is
// deferred ([sqsworker.Defer], reason [ReasonBusy]) after a random wait of up to one
// second in the worker (holding its host's slot, no permit): the host makes it visible
// again after the delay, and counts it as deferred, not failed. The wait spreads
// deferred messages over the second, since SQS counts their delays in whole seconds.
// Each such receive counts toward the queue's maxReceiveCount, so with Config.Hopper a
// message at its last receive but one is re-sent with the delay instead (see
// Config.Hopper) and the original deleted: waiting for a limit never dead-letters a
// healthy job. A DynamoDB error fails the message (the host retries it with its
// backoff): the limit is never skipped.
//
// Put it inside DelayMiddleware (a job not due yet takes no permit) and outside the
// idempotency middleware (a deferral leaves no record).
func (l *Limiter) Middleware() sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			key, rateKey := "", ""
			if l.config.Concurrency > 0 {
				key = l.config.Key(message)
			}
			if l.config.Rate > 0 {
				rateKey = l.config.RateKey(message)
			}
			var start time.Time
			if rateKey != "" {
				reserved, err := l.Reserve(ctx, rateKey)
				if err != nil {
					return l.busy(ctx, message, err)
				}
				start = reserved
				if err := l.waitUntil(ctx, start.Add(-l.config.StartLead)); err != nil {
					return err
				}
			}
			if key == "" {
				return l.startAt(ctx, message, start, next)
			}
			permit, err := l.Acquire(ctx, key)
			if err != nil {
				return l.busy(ctx, message, err)
			}
			held, lose := context.WithCancelCause(ctx)
			defer lose(nil)
			stop := permit.keep(lose)
			defer func() {
				stop()
				release, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.config.Lease/3)
				defer cancel()
				_ = permit.Release(release) // a failed release comes back at the lease's end
			}()
			return l.startAt(context.WithValue(held, permitKey{}, permit), message, start, next)
		})
	}
}

// startAt calls next at start (zero: now): a handler that could start only later than
// lateTolerance after its instant gives its start up and is deferred, so reserved
// starts keep their spacing.
func (l *Limiter) startAt(ctx context.Context, message *sqsworker.Message, start time.Time, next sqsworker.Handler) error {
	if !start.IsZero() {
		if err := l.waitUntil(ctx, start); err != nil {
			return err
		}
		if late := l.config.Now().Sub(start); late > lateTolerance {
			return l.busy(ctx, message, &BusyError{Limit: l.config.Name, Key: l.config.RateKey(message), Kind: "rate (start missed by " + late.String() + ")", RetryAfter: l.retryDelay()})
		}
	}
	return next.Handle(ctx, message)
}

// deferSpread bounds the random wait before a deferral or a hop. SQS sets a message's
// visibility timeout and delay in whole seconds, so messages deferred together come back
// together, in waves a whole number of seconds apart, and a saturated key would serve
// one wave of its Concurrency jobs each RetryDelay whatever their length (limit 1 and
// jobs of 200 ms: one job every 3 s, measured). A random wait of up to one second before
// each deferral spreads their returns over the second, so a freed permit is taken
// again within a fraction of it (TestSaturationDeadLettersNoHealthyJob).
const deferSpread = time.Second

// busy turns a BusyError into a deferral, or a hop when deferring would spend the
// message's redrive budget, each after a random wait of up to deferSpread; other errors
// are returned as they are.
func (l *Limiter) busy(ctx context.Context, message *sqsworker.Message, err error) error {
	busy, ok := errors.AsType[*BusyError](err)
	if !ok {
		return err
	}
	delay := max(busy.RetryAfter, time.Second) // visibility is set in whole seconds
	if err := l.waitUntil(ctx, l.config.Now().Add(rand.N(deferSpread))); err != nil {
		return err
	}
	if l.config.Hopper == nil || message.ReceiveCount+1 < l.config.MaxReceiveCount || strings.HasSuffix(message.QueueURL, ".fifo") {
		return sqsworker.Defer(delay, ReasonBusy)
	}
	return l.config.Hopper.Hop(ctx, withPriorReceives(message), delay)
}

// waitUntil waits until start, unless ctx ends first.
func (l *Limiter) waitUntil(ctx context.Context, start time.Time) error {
	wait := start.Sub(l.config.Now())
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// PriorReceives returns how many times SQS handed out the earlier copies of message
// (the hops [Limiter.Middleware] made to spare its redrive budget): its
// [AttributePriorReceives], or 0. A job's receives in all are PriorReceives plus its
// ReceiveCount.
func PriorReceives(message *sqsworker.Message) int {
	value, _ := message.StringAttribute(AttributePriorReceives)
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// withPriorReceives returns a copy of message whose AttributePriorReceives counts its
// receives so far.
func withPriorReceives(message *sqsworker.Message) *sqsworker.Message {
	copied := *message
	copied.MessageAttributes = maps.Clone(message.MessageAttributes)
	if copied.MessageAttributes == nil {
		copied.MessageAttributes = map[string]sqsworker.MessageAttribute{}
	}
	copied.MessageAttributes[AttributePriorReceives] = sqsworker.MessageAttribute{
		DataType: "Number", StringValue: strconv.Itoa(PriorReceives(message) + message.ReceiveCount),
	}
	return &copied
}

type permitKey struct{}

// PermitFromContext returns the permit the handler runs under (from
// [Limiter.Middleware]), for its fencing token.
func PermitFromContext(ctx context.Context) (*Permit, bool) {
	permit, ok := ctx.Value(permitKey{}).(*Permit)
	return permit, ok
}
