package testenv

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// DeadLetter puts message in the dead-letter queue of the queue at queueURL the way both
// hosts do when a handler's outcome is a dead-letter (internal/settle: the body and
// attributes kept, the failure attributes added), for tests of what reads dead-letter
// queues (redrive, the CLI, the operations page) in modules that may not import the
// runtime internals themselves.
func DeadLetter(t testing.TB, client *sqs.Client, queueURL string, message *sqsworker.Message, outcome sqsworker.Outcome) {
	t.Helper()
	queue, err := sqsinfo.LoadQueue(context.Background(), client, queueURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := settle.SendToDeadLetterQueue(context.Background(), client, queue, message, outcome); err != nil {
		t.Fatal(err)
	}
}
