package idempotency

import (
	"context"
	"time"
)

// EventKind names a decision the middleware reports.
type EventKind int

// The decisions of [Middleware]: one of EventClaimed, EventBypassed, EventKeyMissing,
// EventPayloadInvalid, EventInsufficientTime, EventCompletedDuplicate, EventDeferred,
// EventPayloadMismatch, EventStoreError or EventMalformedRecord per message handled, and after an
// EventClaimed at most one of EventCompleteFailed and EventLeaseLost. Not reported: a
// message whose Config.KeyFunc fails with an error other than [ErrKeyMissing] (that
// error is its outcome), or whose context ended before the claim.
const (
	// EventClaimed: the key was claimed and the handler runs under its lease.
	EventClaimed EventKind = iota + 1
	// EventBypassed: the message has no key and Config.KeyOptional is set: the handler
	// runs without idempotency (nothing read or written). Err says why the key is
	// missing. Count these: a rising count means producers stopped sending keys.
	EventBypassed
	// EventKeyMissing: the message has no key and Config.KeyOptional is not set: it
	// fails permanently with reason "IdempotencyKeyMissing". Err says why.
	EventKeyMissing
	// EventPayloadInvalid: Config.PayloadHash failed (Err): the message fails
	// permanently with reason "IdempotencyPayloadInvalid".
	EventPayloadInvalid
	// EventCompletedDuplicate: the key's record is completed: the handler is skipped.
	EventCompletedDuplicate
	// EventDeferred: the key is in progress elsewhere: the message is deferred for
	// Delay (reason "IdempotencyInProgress").
	EventDeferred
	// EventPayloadMismatch: the key's record holds another payload hash: the message
	// fails permanently with reason "IdempotencyPayloadMismatch".
	EventPayloadMismatch
	// EventInsufficientTime: less than Config.MinRemaining was left before the
	// context's deadline: nothing was claimed and the message fails (retryable).
	EventInsufficientTime
	// EventStoreError: claiming or reading the record failed (Err): the message fails
	// (retryable) and its handler did not run.
	EventStoreError
	// EventCompleteFailed: the handler succeeded but completing the record failed
	// (Err): a later duplicate may run again once the lease ends.
	EventCompleteFailed
	// EventLeaseLost: a renewal found the lease taken over while the handler ran: the
	// handler's context was cancelled with [ErrLeaseLost].
	EventLeaseLost
	// EventMalformedRecord: the item under the key is not an idempotency record (Err
	// matches [ErrMalformedRecord]): the handler did not run and the message fails
	// (retryable) until the item is removed or expires.
	EventMalformedRecord
)

// EventKinds returns every kind the middleware reports, in order (for exporters that
// build one series per kind in advance).
func EventKinds() []EventKind {
	kinds := make([]EventKind, 0, int(EventMalformedRecord))
	for kind := EventClaimed; kind <= EventMalformedRecord; kind++ {
		kinds = append(kinds, kind)
	}
	return kinds
}

// String returns the kind's name as used in logs and metrics.
func (k EventKind) String() string {
	switch k {
	case EventClaimed:
		return "claimed"
	case EventBypassed:
		return "bypassed"
	case EventKeyMissing:
		return "key-missing"
	case EventPayloadInvalid:
		return "payload-invalid"
	case EventCompletedDuplicate:
		return "completed-duplicate"
	case EventDeferred:
		return "deferred"
	case EventPayloadMismatch:
		return "payload-mismatch"
	case EventInsufficientTime:
		return "insufficient-time"
	case EventStoreError:
		return "store-error"
	case EventCompleteFailed:
		return "complete-failed"
	case EventLeaseLost:
		return "lease-lost"
	case EventMalformedRecord:
		return "malformed-record"
	}
	return "unknown"
}

// Event is one decision reported to an [Observer]. Fields that do not apply to the kind
// are zero.
type Event struct {
	Kind EventKind
	// Time is when it happened (Config.Clock).
	Time time.Time
	// MessageID and Queue identify the message (its queue URL; empty when the host did
	// not set it).
	MessageID string
	Queue     string
	// Key is the stored key ([StoredKey]); empty for EventBypassed and EventKeyMissing.
	Key string
	// Delay is how long an EventDeferred message stays away (before the host's cap at
	// SQS's 12-hour visibility limit).
	Delay time.Duration
	// Err is the cause (EventBypassed, EventKeyMissing, EventPayloadInvalid,
	// EventInsufficientTime, EventPayloadMismatch, EventStoreError, EventCompleteFailed,
	// EventLeaseLost, EventMalformedRecord).
	Err error
}

// Observer is told the middleware's decisions: metrics (count events by Kind; package
// github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency records them), logs,
// alerts. The middleware calls ObserveIdempotency synchronously on the message's
// goroutine (EventLeaseLost on the lease's heartbeat goroutine), so it must be quick, must
// not block, and must be safe for concurrent use. It is the middleware's counterpart of
// [sqsworker.Observer].
type Observer interface {
	ObserveIdempotency(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, ev Event)

// ObserveIdempotency calls f(ctx, ev).
func (f ObserverFunc) ObserveIdempotency(ctx context.Context, ev Event) { f(ctx, ev) }

type nopObserver struct{}

func (nopObserver) ObserveIdempotency(context.Context, Event) {}
