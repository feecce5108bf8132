package sqsworker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/scheduler"
)

// everything observes the hosts, the outbox relays, the idempotency middleware and the
// scheduler: each observer interface has a method name of its own.
type everything struct{ seen []string }

func (e *everything) Observe(_ context.Context, ev sqsworker.Event) {
	e.seen = append(e.seen, "message:"+ev.Kind.String())
}

func (e *everything) ObserveOutbox(_ context.Context, ev outbox.Event) {
	e.seen = append(e.seen, "outbox:"+ev.Kind.String())
}

func (e *everything) ObserveIdempotency(_ context.Context, ev idempotency.Event) {
	e.seen = append(e.seen, "idempotency:"+ev.Kind.String())
}

func (e *everything) ObserveScheduler(_ context.Context, ev scheduler.Event) {
	e.seen = append(e.seen, "scheduler:"+ev.Kind.String())
}

func TestOneValueObservesEverySubsystem(t *testing.T) {
	t.Parallel()
	observer := &everything{}
	hosts := poller.Config{Observer: observer}
	relays := outbox.RelayConfig{Observer: observer}
	middleware := idempotency.Config{Observer: observer}
	schedules := scheduler.Config{Observer: observer}
	ctx := context.Background()
	hosts.Observer.Observe(ctx, sqsworker.Event{Kind: sqsworker.EventReceived})
	relays.Observer.ObserveOutbox(ctx, outbox.Event{Kind: outbox.EventPublished})
	middleware.Observer.ObserveIdempotency(ctx, idempotency.Event{Kind: idempotency.EventClaimed})
	schedules.Observer.ObserveScheduler(ctx, scheduler.Event{Kind: scheduler.EventTickEnqueued})
	assert.Equal(t, []string{"message:received", "outbox:published", "idempotency:claimed", "scheduler:tick-enqueued"}, observer.seen)
}
