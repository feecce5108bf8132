package poller

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// delivery is one received message while this server holds it: from the receive until
// it is settled (handed to the delete batch, rescheduled or released).
type delivery struct {
	// lane is the queue the message came from: its settlement and FIFO rule.
	lane    *lane
	message *sqsworker.Message
	// receivedAt is when the ReceiveMessage call that returned the message started: no
	// later than SQS started the message's visibility clock.
	receivedAt time.Time
	// lease is the message's heartbeat registration.
	lease *lease
	// startedAt is when its handler was called (zero before).
	startedAt time.Time
	// visibleUntil is when its receipt handle stops being valid, as the heartbeat left
	// it when the message was settled.
	visibleUntil time.Time
	// pending is the visibility change of a rescheduled message not sent yet (a FIFO
	// message whose change goes out with the release of its group's rest).
	pending *settle.Action
	// awaitsToken is set while the message counts in its lane's awaiting: received from
	// a rate-limited queue, its token not taken yet.
	awaitsToken bool
}

// lane is one queue's side of a server: its URL, whether it is FIFO, its handler, its
// settler (with that queue's extender and acker), its share of the slot pool and its
// limits. The slot pool (Config.Concurrency) and the dispatcher are not bound to a
// queue: they take each delivery's lane from the delivery, so one pool and one
// dispatcher serve every receiver, one per queue (Config.Queues, or Config.QueueURL).
type lane struct {
	queueURL string
	fifo     bool
	handler  sqsworker.Handler
	settler  *settler
	slots    *poolQueue
	// rate is QueueConfig.Limit's token bucket (nil: none); its concurrency is slots'.
	rate *limiter
	// jobTypes are Config.JobTypeLimits' limiters, shared by every lane; read-only.
	jobTypes map[string]*limiter
	// awaiting counts this queue's messages received but whose token is not taken yet,
	// so a receive asks only for tokens they leave (see limiter.available).
	awaiting atomic.Int64
}

// tokenSettled ends d's claim on its lane's tokens: taken at the handler's start, or
// given up when d is released unstarted.
func (l *lane) tokenSettled(d *delivery) {
	if d.awaitsToken {
		d.awaitsToken = false
		l.awaiting.Add(-1)
	}
}

// enter waits until d may start: a place of its job type's concurrency limit, then a
// free token of its job type's rate limit and of its queue's (the heartbeat keeps d
// hidden meanwhile). The pass's take takes the tokens (call it just before the
// handler), its leave gives the places back when the handler returns. err is ctx's
// error, or errStopped when stop closed first; then the pass is already left.
func (l *lane) enter(ctx context.Context, stop <-chan struct{}, d *delivery) (*pass, error) {
	defer l.tokenSettled(d)
	p := &pass{}
	if err := l.jobTypes[d.message.JobType()].enter(ctx, stop, p); err != nil {
		p.leave()
		return nil, err
	}
	if err := l.rate.enter(ctx, stop, p); err != nil {
		p.leave()
		return nil, err
	}
	return p, nil
}

// byLane groups deliveries by their lane, keeping their order within each.
func byLane(deliveries []*delivery) map[*lane][]*delivery {
	lanes := make(map[*lane][]*delivery, 1)
	for _, d := range deliveries {
		lanes[d.lane] = append(lanes[d.lane], d)
	}
	return lanes
}
