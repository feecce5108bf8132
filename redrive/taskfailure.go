package redrive

import (
	"errors"
	"fmt"
)

// ErrMoveTaskFailed matches (with errors.Is) the error [MoveTask.Err] returns for a
// FAILED task.
var ErrMoveTaskFailed = errors.New("redrive: the message move task failed")

// Err returns nil unless the task FAILED. Then it returns an error matching
// [ErrMoveTaskFailed] with SQS's FailureReason and, for a task without a destination,
// its likely cause: such a task sends each message back to the queue SQS's redrive
// policy moved it from, which SQS records on the message (DeadLetterQueueSourceArn)
// only when its redrive policy moved it. A copy a worker sent to the dead-letter queue
// itself (a permanent failure; it carries the failure-source-queue attribute instead)
// has no such origin. AWS does not document what the task then does; LocalStack 4.14
// fails it with the bare reason "AttributeError", after moving the messages before it.
// Give such messages a destination, or move them with a [Mover].
func (t MoveTask) Err() error {
	if t.Status != MoveTaskFailed {
		return nil
	}
	reason := t.FailureReason
	if reason == "" {
		reason = "no reason given"
	}
	err := fmt.Errorf("%w on %s after moving %d of %d: %s", ErrMoveTaskFailed, t.SourceARN, t.Moved, t.ToMove, reason)
	if t.DestinationARN != "" {
		return err
	}
	return fmt.Errorf("%w; the task had no destination, so SQS returns each message to the queue its redrive policy moved it from "+
		"(DeadLetterQueueSourceArn), and a message dead-lettered by the worker itself, not by SQS's redrive policy, has none "+
		"(it carries the failure-source-queue attribute instead)", err)
}
