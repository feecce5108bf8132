package poller

// Interruptions by shutdown are no attempts: deploys (poller restarts) mid-job, with
// the idempotency middleware on DynamoDB recording them.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// deployJob is a job type whose first interrupts receives run until the worker is
// restarted (they wait for their context), and whose later receives fail (fail) or
// succeed. calls records each call's Message.Attempt and ReceiveCount.
type deployJob struct {
	mu         sync.Mutex
	interrupts int
	fail       bool
	attempts   []int
	receives   []int
	running    chan struct{} // a token per call; buffered for every call
}

func (j *deployJob) handle(ctx context.Context, m *sqsworker.Message) error {
	j.mu.Lock()
	j.attempts = append(j.attempts, m.Attempt())
	j.receives = append(j.receives, m.ReceiveCount)
	call := len(j.attempts)
	j.mu.Unlock()
	j.running <- struct{}{}
	if call <= j.interrupts {
		<-ctx.Done() // a long job: the deploy's drain deadline ends it
		return context.Cause(ctx)
	}
	if j.fail {
		return fmt.Errorf("attempt %d failed", m.Attempt())
	}
	return nil
}

func (j *deployJob) snapshot() (attempts, receives []int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]int(nil), j.attempts...), append([]int(nil), j.receives...)
}

// runDeploys sends one job of type "deploy" and serves it with a fresh poller per
// receive, restarting (Shutdown with a 1.5 s drain) while each of its first
// job.interrupts calls runs, then lets the last poller run until done reports true.
func runDeploys(t *testing.T, job *deployJob, maxReceiveCount int, done func() bool) (queue testenv.Queue, messageID string) {
	t.Helper()
	client := testenv.SQS(t)
	queue = testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: maxReceiveCount})
	store := idempotency.NewDynamoDBStore(testenv.DynamoDB(t), testenv.NewTable(t, testenv.DynamoDB(t)))
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("deploy", job.handle, sqsworker.JobMaxAttempts(3), sqsworker.JobRetryDelays(0),
		sqsworker.JobMiddleware(idempotency.Middleware(store, idempotency.Config{KeyFunc: idempotency.KeyFromMessageID})))
	sent, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:          aws.String(queue.URL),
		MessageBody:       aws.String("{}"),
		MessageAttributes: map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("deploy")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The drain outlasts the long poll in flight at the shutdown (as the defaults do, 25 s
	// and 20 s), so that poll has ended when the drain deadline releases the job: a
	// released job handed to a poll still open would be one more receive that never
	// reached the handler, which the idempotency record cannot see.
	config := Config{QueueURL: queue.URL, WaitTime: time.Second, DrainTimeout: 1500 * time.Millisecond, Logger: quietLogger()}
	for range job.interrupts {
		server := newServer(t, client, config, mux)
		if err := server.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-job.running:
		case <-time.After(time.Minute):
			t.Fatal("the job did not start")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := server.Shutdown(ctx) // the deploy: SIGTERM's drain, cut short at 1.5 s
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v", err)
		}
	}
	startServer(t, client, config, mux)
	testenv.Eventually(t, time.Minute, "the job settled", done)
	return queue, aws.ToString(sent.MessageId)
}

// TestEmulatorInterruptedByDeploysKeepsItsAttempts: a job type with MaxAttempts 3 whose
// job is interrupted by three deploys (poller restarts mid-job, the drain deadline
// ending it) and then always fails still gets its three attempts: it is called six
// times, at attempts 1, 1, 1, 1, 2, 3 (receives 1 to 6), then dead-lettered with reason
// RetriesExhausted and the third attempt's error. Without the interruptions recorded,
// the limit would dead-letter it at its third receive, still interrupted.
func TestEmulatorInterruptedByDeploysKeepsItsAttempts(t *testing.T) {
	t.Parallel()
	job := &deployJob{interrupts: 3, fail: true, running: make(chan struct{}, 16)}
	client := testenv.SQS(t)
	var dead []types.Message
	queue, id := runDeploys(t, job, 8, func() bool { attempts, _ := job.snapshot(); return len(attempts) >= 6 })
	dead = testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1}, 1, time.Minute)
	attempts, receives := job.snapshot()
	if fmt.Sprint(attempts) != "[1 1 1 1 2 3]" || fmt.Sprint(receives) != "[1 2 3 4 5 6]" {
		t.Errorf("calls at attempts %v, receives %v; want [1 1 1 1 2 3] and [1 2 3 4 5 6]", attempts, receives)
	}
	if len(dead) != 1 {
		t.Fatalf("dead-letter queue holds %d messages, want 1", len(dead))
	}
	attributes := map[string]string{}
	for name, value := range dead[0].MessageAttributes {
		attributes[name] = aws.ToString(value.StringValue)
	}
	if attributes[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted || attributes[sqsworker.AttributeFailureError] != "attempt 3 failed" ||
		attributes[sqsworker.AttributeFailureMessageID] != id {
		t.Errorf("dead-letter copy %v, want RetriesExhausted with the third attempt's error", attributes)
	}
}

// TestEmulatorDeployStormDeadLettersNoHealthyJob: ten deploys interrupt a healthy job of
// a type with MaxAttempts 3 (on a queue whose maxReceiveCount, 12, leaves room for
// them); at the eleventh receive it succeeds, at attempt 1, and nothing reaches the
// dead-letter queue.
func TestEmulatorDeployStormDeadLettersNoHealthyJob(t *testing.T) {
	t.Parallel()
	job := &deployJob{interrupts: 10, running: make(chan struct{}, 32)}
	client := testenv.SQS(t)
	queue, _ := runDeploys(t, job, 12, func() bool { attempts, _ := job.snapshot(); return len(attempts) >= 11 })
	testenv.Eventually(t, 30*time.Second, "the job deleted", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return visible+inFlight == 0
	})
	attempts, receives := job.snapshot()
	if len(attempts) != 11 || attempts[10] != 1 || receives[10] != 11 {
		t.Errorf("calls at attempts %v, receives %v; want 11 calls, the last at attempt 1, receive 11", attempts, receives)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible+inFlight != 0 {
		t.Errorf("dead-letter queue holds %d messages, want none", visible+inFlight)
	}
}
