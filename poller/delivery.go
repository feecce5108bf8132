package poller

import (
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
}

// lane is one queue's side of a server: its URL, whether it is FIFO, and its settler
// (with that queue's extender and acker). The slot pool (Config.Concurrency) and the
// dispatcher are not bound to a queue: they take each delivery's lane from the
// delivery, so one pool and one dispatcher can serve several receivers, one per queue.
// A server has one lane today (Config.QueueURL).
type lane struct {
	queueURL string
	fifo     bool
	settler  *settler
}

// byLane groups deliveries by their lane, keeping their order within each.
func byLane(deliveries []*delivery) map[*lane][]*delivery {
	lanes := make(map[*lane][]*delivery, 1)
	for _, d := range deliveries {
		lanes[d.lane] = append(lanes[d.lane], d)
	}
	return lanes
}
