package testenv

import (
	"os"
	"testing"
)

// Emulator names an SQS emulator the tests can run against.
type Emulator string

// The SQS emulators of localstack/: LocalStack (localstack/up, the default) and ElasticMQ
// (localstack/elasticmq-up, chosen with SQSWORKER_SQS_EMULATOR=elasticmq).
const (
	LocalStack Emulator = "localstack"
	ElasticMQ  Emulator = "elasticmq"
)

// SQSEmulator returns the SQS emulator the tests talk to, from SQSWORKER_SQS_EMULATOR,
// which localstack/env exports next to AWS_ENDPOINT_URL_SQS. Unset means LocalStack, as
// in localstack/env, so a test never skips unless ElasticMQ was chosen explicitly.
func SQSEmulator() Emulator {
	if name := os.Getenv("SQSWORKER_SQS_EMULATOR"); name != "" {
		return Emulator(name)
	}
	return LocalStack
}

// Deviation is a proven, documented way in which one SQS emulator differs from AWS
// (localstack/README.md, "Where the emulators differ from AWS"). A test whose outcome
// depends on AWS's behaviour there skips on that emulator only, with SkipOn.
type Deviation struct {
	// Emulator is the emulator that differs from AWS.
	Emulator Emulator
	// Text says what the emulator does and what AWS does instead.
	Text string
}

// The deviations tests skip on. Each is described, with its evidence, in
// localstack/README.md.
var (
	// ElasticMQIgnoresSizeAndRetention: MaximumMessageSize and MessageRetentionPeriod are
	// neither stored nor returned.
	ElasticMQIgnoresSizeAndRetention = Deviation{ElasticMQ, "ElasticMQ 1.7.1 ignores the MaximumMessageSize and MessageRetentionPeriod " +
		"queue attributes (CreateQueue and SetQueueAttributes accept them, GetQueueAttributes never returns them, and every queue takes " +
		"messages up to 1 MiB); AWS returns both for every queue and rejects messages above the queue's MaximumMessageSize"}
	// ElasticMQMoveTaskToMoveCountsDown: ApproximateNumberOfMessagesToMove is what is left.
	ElasticMQMoveTaskToMoveCountsDown = Deviation{ElasticMQ, "ElasticMQ 1.7.1 reports a move task's ApproximateNumberOfMessagesToMove " +
		"as the messages still to move (0 once COMPLETED); AWS reports the number taken when the task started"}
	// ElasticMQForgetsCancelledMoveTasks: a cancelled task is no longer listed.
	ElasticMQForgetsCancelledMoveTasks = Deviation{ElasticMQ, "ElasticMQ 1.7.1 drops a cancelled message move task from " +
		"ListMessageMoveTasks at once; AWS lists it as CANCELLING, then CANCELLED"}
	// ElasticMQRedrivesToOneSourceQueue: a move task without a destination sends every
	// message to one queue.
	ElasticMQRedrivesToOneSourceQueue = Deviation{ElasticMQ, "ElasticMQ 1.7.1 moves every message of a dead-letter queue " +
		"shared by several source queues to one of them when StartMessageMoveTask has no DestinationArn; AWS sends each " +
		"message back to its own source queue (its DeadLetterQueueSourceArn)"}
	// LocalStackRedriveKeepsTheMessage: a native move keeps the message id and counts.
	LocalStackRedriveKeepsTheMessage = Deviation{LocalStack, "LocalStack 4.14 moves a message with its message id, SentTimestamp " +
		"and ApproximateReceiveCount (the first receive after a native redrive shows 4 after 2 failed receives, so the next " +
		"receive sends it straight back to the dead-letter queue); AWS redrives it as a new message, with a new message id and " +
		"enqueue time, whose first receive shows 1"}
	// ElasticMQRejectsRepeatedDelete: a second delete of a deleted message fails.
	ElasticMQRejectsRepeatedDelete = Deviation{ElasticMQ, "ElasticMQ 1.7.1 answers DeleteMessage with the receipt handle of a " +
		"message that was already deleted with ReceiptHandleIsInvalid; AWS accepts it (the request succeeds)"}
)

// SkipOn skips the test when it runs on the emulator that has deviation d, naming the
// deviation; on every other emulator it does nothing.
func SkipOn(t testing.TB, d Deviation) {
	t.Helper()
	if SQSEmulator() == d.Emulator {
		t.Skipf("skipped on %s: this outcome depends on AWS behaviour that %s lacks (localstack/README.md, "+
			"\"Where the emulators differ from AWS\"): %s", d.Emulator, d.Emulator, d.Text)
	}
}
