package e2e_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
)

// C06, ECS variant: the worker is SIGKILLed mid-handler while it holds the idempotency
// lease (the per-message handler deadline). The next delivery, after the visibility
// timeout, finds the lease expired, takes the record over and runs.
func TestKilledWorkersLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	// Scaled from the case (timeout 10 s, visibility 60 s) to keep the suite fast: the
	// lease (5 s) ends well before the message reappears (10 s).
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second, MaxReceiveCount: 5})
	table := testenv.NewTable(t, dynamoClient)
	send(t, sqsClient, queue.URL, body("paymentId", "P-77"))

	worker := startDoomedWorker(t, queue.URL, table, "paymentId", 5*time.Second)
	require.Equal(t, startedLine+" receive_count=1", worker.awaitHandler(t, 30*time.Second))
	item := record(t, dynamoClient, table, "P-77")
	require.Equal(t, "IN_PROGRESS", stringAttribute(item, "status"))
	leaseEnd := epochMilliseconds(t, stringAttribute(item, "in_progress_expiry"))
	assert.True(t, leaseEnd.After(time.Now()), "the lease is live while the handler runs")
	assert.True(t, !leaseEnd.After(time.Now().Add(5*time.Second)), "the lease is the 5 s handler deadline, not longer: %s", time.Until(leaseEnd))
	worker.kill(t)

	effects := newEffects()
	commit := sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		effects.commit("P-77", message.ReceiveCount)
		return nil
	})
	startPoller(t, sqsClient, poller.Config{QueueURL: queue.URL, HandlerTimeout: 30 * time.Second}, idempotent(t, table, "paymentId", commit))

	testenv.Eventually(t, time.Minute, "P-77 committed and deleted", func() bool {
		visible, inFlight := testenv.Counts(t, sqsClient, queue.URL)
		return effects.of("P-77") == 1 && visible+inFlight == 0
	})
	assert.Equal(t, []int{2}, effects.receiveCountsOf("P-77"), "committed once, on the second receive")
	assert.Equal(t, "COMPLETED", stringAttribute(record(t, dynamoClient, table, "P-77"), "status"))
	requireEmpty(t, sqsClient, queue.DeadLetterQueueURL, "the dead-letter queue")
}

// C10: a duplicate delivery while the original still runs is deferred by the lease time
// left (not failed, not deleted); after the lease ends the next delivery takes over.
func TestDuplicateWhileOriginalRunsIsDeferred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{VisibilityTimeout: 20 * time.Second, MaxReceiveCount: 5})
	table := testenv.NewTable(t, dynamoClient)
	send(t, sqsClient, queue.URL, body("invoice", "I-5"))

	// W1 receives m1 and runs the idempotent handler with an 8 s deadline; its handler
	// hangs and never commits, like a process about to be killed.
	received := testenv.Receive(t, sqsClient, sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queue.URL),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}, 1, testenv.ReceiveTimeout)
	require.Len(t, received, 1)
	w1Message := sqsx.FromSDK(received[0], queue.URL, queue.ARN)
	started, hung := make(chan struct{}), make(chan struct{})
	w1 := idempotent(t, table, "invoice", sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		close(started)
		<-hung
		return errors.New("killed")
	}))
	w1Context, cancelW1 := context.WithTimeout(ctx, 8*time.Second)
	w1Done := make(chan struct{})
	go func() {
		defer close(w1Done)
		_ = w1.Handle(w1Context, w1Message)
	}()
	t.Cleanup(func() {
		close(hung)
		<-w1Done
		cancelW1()
	})
	<-started
	leaseEnd := epochMilliseconds(t, stringAttribute(record(t, dynamoClient, table, "I-5"), "in_progress_expiry"))

	// The harness makes m1 visible at once, so W2 receives it while W1 still holds it.
	_, err := sqsClient.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(queue.URL), ReceiptHandle: received[0].ReceiptHandle, VisibilityTimeout: 0,
	})
	require.NoError(t, err)

	effects := newEffects()
	var committedAt time.Time
	commit := sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		committedAt = time.Now()
		effects.commit("I-5", message.ReceiveCount)
		return nil
	})
	auditor := &deleteAuditor{Client: sqsClient, status: func() string {
		return stringAttribute(record(t, dynamoClient, table, "I-5"), "status")
	}}
	w2 := startPoller(t, auditor, poller.Config{QueueURL: queue.URL, HandlerTimeout: 30 * time.Second}, idempotent(t, table, "invoice", commit))

	testenv.Eventually(t, time.Minute, "I-5 committed and deleted", func() bool {
		visible, inFlight := testenv.Counts(t, sqsClient, queue.URL)
		return effects.of("I-5") == 1 && visible+inFlight == 0
	})
	assert.Equal(t, []int{3}, effects.receiveCountsOf("I-5"), "receives: W1, W2's deferred copy, the takeover")
	stats := w2.Stats()
	assert.Equal(t, int64(1), stats.Deferred, "W2's copy is deferred")
	assert.Equal(t, int64(0), stats.Failed, "a deferral is not a failure")
	assert.False(t, committedAt.Before(leaseEnd), "the takeover waits for the lease to end")
	// Deferred by the lease time left plus the takeover's clock-skew allowance and at most
	// the defer jitter; then LocalStack's ~1 s visibility lag (localstack/README.md) and one
	// receive and handler call on a busy machine (2 s). A fixed delay (the old whole-lease
	// deferral) would land far later.
	bound := idempotency.DefaultClockSkewAllowance + idempotency.DefaultMaxDeferJitter + time.Second + 2*time.Second
	assert.Less(t, committedAt.Sub(leaseEnd), bound, "the deferral follows the lease, not a fixed delay")
	assert.Equal(t, []string{"COMPLETED"}, auditor.statuses(), "exactly one delete, issued only after the record was COMPLETED")
	assert.Equal(t, "COMPLETED", stringAttribute(record(t, dynamoClient, table, "I-5"), "status"))
	requireEmpty(t, sqsClient, queue.DeadLetterQueueURL, "the dead-letter queue")
}

// deleteAuditor records the idempotency record's status at each DeleteMessageBatch entry.
type deleteAuditor struct {
	*sqs.Client
	status func() string
	mu     sync.Mutex
	seen   []string
}

func (a *deleteAuditor) DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, options ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	status := a.status()
	a.mu.Lock()
	for range input.Entries {
		a.seen = append(a.seen, status)
	}
	a.mu.Unlock()
	return a.Client.DeleteMessageBatch(ctx, input, options...)
}

func (a *deleteAuditor) statuses() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// C12, idempotency part: every delete of m3's first delivery fails (200 with a per-entry
// InternalError) until its receipt handle expires; m3 comes back, and the idempotency
// layer skips the handler.
func TestUndeletedMessageReturnsAndIsSkipped(t *testing.T) {
	t.Parallel()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{VisibilityTimeout: 5 * time.Second, MaxReceiveCount: 5})
	table := testenv.NewTable(t, dynamoClient)
	for i := 1; i <= 5; i++ {
		send(t, sqsClient, queue.URL, body("job", "m"+strconv.Itoa(i)))
	}

	effects := newEffects()
	commit := sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		key := message.Body[len(`{"job":"`) : len(message.Body)-2]
		effects.commit(key, message.ReceiveCount)
		return nil
	})
	faulty := &failingDeletes{Client: sqsClient, targetBody: body("job", "m3")}
	server := startPoller(t, faulty, poller.Config{QueueURL: queue.URL, HandlerTimeout: 30 * time.Second}, idempotent(t, table, "job", commit))

	testenv.Eventually(t, time.Minute, "all five handled, m3 delivered twice, queue empty", func() bool {
		visible, inFlight := testenv.Counts(t, sqsClient, queue.URL)
		return faulty.receivesOfTarget() == 2 && visible+inFlight == 0
	})
	for i := 1; i <= 5; i++ {
		key := "m" + strconv.Itoa(i)
		assert.Equal(t, 1, effects.of(key), "effects[%s]", key)
	}
	assert.Equal(t, []int{1}, effects.receiveCountsOf("m3"), "the second delivery of m3 is skipped by the idempotency layer")
	assert.GreaterOrEqual(t, faulty.failedEntries(), 1)
	assert.Equal(t, int64(1), server.Stats().DeleteFailures, "m3's first delivery is reported as not deleted")
	requireEmpty(t, sqsClient, queue.DeadLetterQueueURL, "the dead-letter queue")
}

// failingDeletes fails every delete of the first delivery of the message with targetBody.
type failingDeletes struct {
	*sqs.Client
	targetBody   string
	mu           sync.Mutex
	firstReceipt string
	receives     int
	failed       int
}

func (f *failingDeletes) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, options ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	output, err := f.Client.ReceiveMessage(ctx, input, options...)
	if err == nil {
		f.mu.Lock()
		for _, message := range output.Messages {
			if aws.ToString(message.Body) == f.targetBody {
				f.receives++
				if f.firstReceipt == "" {
					f.firstReceipt = aws.ToString(message.ReceiptHandle)
				}
			}
		}
		f.mu.Unlock()
	}
	return output, err
}

func (f *failingDeletes) DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, options ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	var forward []types.DeleteMessageBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, entry := range input.Entries {
		if aws.ToString(entry.ReceiptHandle) == f.firstReceipt {
			f.failed++
			failed = append(failed, types.BatchResultErrorEntry{Id: entry.Id, Code: aws.String("InternalError"), SenderFault: false, Message: aws.String("injected")})
			continue
		}
		forward = append(forward, entry)
	}
	f.mu.Unlock()
	output := &sqs.DeleteMessageBatchOutput{}
	if len(forward) > 0 {
		var err error
		request := *input
		request.Entries = forward
		if output, err = f.Client.DeleteMessageBatch(ctx, &request, options...); err != nil {
			return nil, err
		}
	}
	output.Failed = append(output.Failed, failed...)
	return output, nil
}

func (f *failingDeletes) receivesOfTarget() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.receives
}

func (f *failingDeletes) failedEntries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// C15 with idempotency: at the drain deadline the slow handler's context is cancelled,
// the middleware releases its record (a delete conditioned on the lease) and the poller
// releases the message (visibility 0), so another worker runs it within seconds.
func TestDrainReleasesRecordAndMessage(t *testing.T) {
	t.Parallel()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{VisibilityTimeout: 300 * time.Second, MaxReceiveCount: 5})
	table := testenv.NewTable(t, dynamoClient)
	send(t, sqsClient, queue.URL, body("job", "f1"))
	send(t, sqsClient, queue.URL, body("job", "s1"))

	effects := newEffects()
	var startedMu sync.Mutex
	started := map[string]bool{}
	work := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		key := message.Body[len(`{"job":"`) : len(message.Body)-2]
		startedMu.Lock()
		started[key] = true
		startedMu.Unlock()
		need := 2 * time.Second
		if key == "s1" {
			need = 120 * time.Second
		}
		select {
		case <-time.After(need):
			effects.commit(key, message.ReceiveCount)
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	// The long poll in flight at shutdown is left to finish (see poller.Server.Shutdown),
	// so a short wait keeps the shutdown short.
	const drain, wait = 4 * time.Second, 5 * time.Second
	w1, err := poller.New(sqsClient, poller.Config{QueueURL: queue.URL, HandlerTimeout: 5 * time.Minute, DrainTimeout: drain, WaitTime: wait, Logger: testLogger(t)}, idempotent(t, table, "job", work))
	require.NoError(t, err)
	require.NoError(t, w1.Start(context.Background()))
	testenv.Eventually(t, 30*time.Second, "f1 and s1 running on W1", func() bool {
		startedMu.Lock()
		defer startedMu.Unlock()
		return started["f1"] && started["s1"]
	})

	shutdownStarted := time.Now()
	shutdownContext, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w1.Shutdown(shutdownContext))
	released := time.Now()
	assert.Less(t, released.Sub(shutdownStarted), max(drain, wait)+3*time.Second, "shutdown ends shortly after the drain deadline and the last long poll")
	assert.Equal(t, 1, effects.of("f1"), "f1 finished within the drain deadline")
	assert.Equal(t, 0, effects.of("s1"), "s1 was cancelled")
	assert.Equal(t, "COMPLETED", stringAttribute(record(t, dynamoClient, table, "f1"), "status"))
	// s1's record is released with its interrupted receive kept (an interruption is no
	// attempt): its lease ends in the past, so no one waits for it.
	s1Record := record(t, dynamoClient, table, "s1")
	require.NotNil(t, s1Record, "s1's record keeps its interrupted receive")
	assert.Equal(t, "1", stringAttribute(s1Record, "interrupted"), "s1 was interrupted once")
	assert.True(t, epochMilliseconds(t, stringAttribute(s1Record, "in_progress_expiry")).Before(shutdownStarted),
		"s1's lease ended at its release, so no one waits for it")

	var s1At time.Time
	commit := sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		key := message.Body[len(`{"job":"`) : len(message.Body)-2]
		if key == "s1" {
			s1At = time.Now()
		}
		effects.commit(key, message.ReceiveCount)
		return nil
	})
	startPoller(t, sqsClient, poller.Config{QueueURL: queue.URL, HandlerTimeout: 30 * time.Second}, idempotent(t, table, "job", commit))
	testenv.Eventually(t, 30*time.Second, "s1 run by the second worker and deleted", func() bool {
		visible, inFlight := testenv.Counts(t, sqsClient, queue.URL)
		return effects.of("s1") == 1 && visible+inFlight == 0
	})
	assert.Less(t, s1At.Sub(released), 5*time.Second, "s1 is picked up within seconds, not after the 300 s visibility timeout")
	// W1's last long poll was still live when s1 was released, so it may have received
	// s1 once more and released it again at once: each such receive is one more release.
	extraReceives := int(w1.Stats().Released) - 1
	assert.Equal(t, []int{2 + extraReceives}, effects.receiveCountsOf("s1"))
	assert.Equal(t, 1, effects.of("f1"))
	requireEmpty(t, sqsClient, queue.DeadLetterQueueURL, "the dead-letter queue")
}

func epochMilliseconds(t *testing.T, text string) time.Time {
	t.Helper()
	milliseconds, err := strconv.ParseInt(text, 10, 64)
	require.NoError(t, err, "epoch milliseconds %q", text)
	return time.UnixMilli(milliseconds)
}
