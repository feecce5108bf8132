package poller

import (
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// delivery is one received message while this server holds it: from the receive until
// it is settled (handed to the delete batch, rescheduled or released).
type delivery struct {
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
