package poller

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
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
}

// convertMessage translates an SDK message into the neutral message handlers see.
func convertMessage(in types.Message, queue *sqsworker.Queue) *sqsworker.Message {
	return sqsworker.MessageFromSQS(in, queue.URL, queue.ARN)
}
