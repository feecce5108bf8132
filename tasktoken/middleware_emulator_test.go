package tasktoken_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/sfntest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/tasktoken"
)

// order is the job the test state machines send: their input, with the task token in
// the body's taskToken field (which the handler does not see).
type order struct {
	Order string `json:"order"`
}

// rig is one state machine sending task-token jobs to one queue (maxReceiveCount 3).
type rig struct {
	states  *sfn.Client
	queues  *sqs.Client
	queue   testenv.Queue
	machine string
}

// taskState is the waitForTaskToken state of the test machines: the input's fields and
// the token in the body, the token in the TaskToken attribute too. It has no
// HeartbeatSeconds unless a test adds it: LocalStack 4.14 loses an answer sent within
// milliseconds of the task's message when the state has HeartbeatSeconds
// (localstack/README.md), and these handlers answer at once.
func taskState(queueURL string) map[string]any {
	return map[string]any{
		"Type":     "Task",
		"Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
		"Parameters": map[string]any{
			"QueueUrl":          queueURL,
			"MessageBody":       map[string]any{"order.$": "$.order", "taskToken.$": "$$.Task.Token"},
			"MessageAttributes": map[string]any{"TaskToken": map[string]any{"DataType": "String", "StringValue.$": "$$.Task.Token"}},
		},
		"Catch": []any{
			map[string]any{"ErrorEquals": []string{"Payment.Declined"}, "Next": "Declined"},
			map[string]any{"ErrorEquals": []string{tasktoken.ErrorRetriesExhausted}, "Next": "Exhausted"},
			map[string]any{"ErrorEquals": []string{tasktoken.ErrorOutputTooLarge}, "Next": "TooLarge"},
		},
		"End": true,
	}
}

// newRig makes the queue and a machine whose Job state is taskState with edit applied.
func newRig(t *testing.T, edit func(job map[string]any)) rig {
	t.Helper()
	r := rig{states: sfntest.Require(t), queues: testenv.SQS(t)}
	r.queue = testenv.NewQueue(t, r.queues, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second, MaxReceiveCount: 3})
	job := taskState(sfntest.Target(t, r.queue))
	if edit != nil {
		edit(job)
	}
	r.machine = sfntest.NewStateMachine(t, r.states, map[string]any{
		"StartAt": "Job",
		"States": map[string]any{
			"Job":       job,
			"Declined":  map[string]any{"Type": "Pass", "End": true},
			"Exhausted": map[string]any{"Type": "Pass", "End": true},
			"TooLarge":  map[string]any{"Type": "Pass", "End": true},
		},
	})
	return r
}

// middleware is tasktoken.New for the rig, reading the redrive policy from the queue.
func (r rig) middleware(t *testing.T, heartbeat time.Duration) sqsworker.Middleware {
	t.Helper()
	mw, err := tasktoken.New(tasktoken.Config{
		API:               r.states,
		Token:             tasktoken.BodyField("taskToken"),
		HeartbeatInterval: heartbeat,
		Queues:            r.queues,
	})
	if err != nil {
		t.Fatalf("tasktoken.New: %v", err)
	}
	return mw
}

// serve runs handler behind the middleware on a poller until the test ends.
func (r rig) serve(t *testing.T, heartbeat time.Duration, handler sqsworker.Handler) {
	t.Helper()
	server, err := poller.New(r.queues, poller.Config{
		QueueURL: r.queue.URL,
		Backoff:  sqsworker.Backoff{Base: 100 * time.Millisecond, Cap: 100 * time.Millisecond},
		WaitTime: time.Second,
	}, sqsworker.Chain(handler, r.middleware(t, heartbeat)))
	if err != nil {
		t.Fatalf("poller.New: %v", err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
}

// finish waits for the execution and checks its status and the states it entered.
func (r rig) finish(t *testing.T, execution string, status sfntypes.ExecutionStatus, entered ...string) *sfn.DescribeExecutionOutput {
	t.Helper()
	done := sfntest.Finished(t, r.states, execution, 60*time.Second)
	if got := sfntest.EnteredStates(t, r.states, execution); done.Status != status || !slices.Equal(got, entered) {
		t.Fatalf("execution %s through %v (error %q, cause %q), want %s through %v",
			done.Status, got, aws.ToString(done.Error), aws.ToString(done.Cause), status, entered)
	}
	return done
}

// settled waits until the queue holds no message and checks the dead-letter queue is empty.
func (r rig) settled(t *testing.T) {
	t.Helper()
	testenv.WaitQueueEmpty(t, r.queues, r.queue.URL, 30*time.Second)
	if visible, inFlight := testenv.Counts(t, r.queues, r.queue.DeadLetterQueueURL); visible+inFlight != 0 {
		t.Fatalf("dead-letter queue holds %d messages, want none (an answered task's message is finished)", visible+inFlight)
	}
}

func TestSuccessReportsTheHandlersOutputOnEmulator(t *testing.T) {
	r := newRig(t, nil)
	var calls atomic.Int32
	r.serve(t, 0, sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		calls.Add(1)
		return tasktoken.SetOutput(ctx, map[string]string{"charged": job.Order})
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-1"})
	done := r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job")
	if got := aws.ToString(done.Output); got != `{"charged":"o-1"}` {
		t.Fatalf("execution output %s, want the handler's output", got)
	}
	r.settled(t)
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", calls.Load())
	}
}

func TestPermanentFailureIsCaughtByItsReasonOnEmulator(t *testing.T) {
	r := newRig(t, nil)
	var calls atomic.Int32
	r.serve(t, 0, sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		calls.Add(1)
		return sqsworker.Permanent("Payment.Declined", errors.New("card declined for "+job.Order))
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-2"})
	r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job", "Declined")
	var cause string
	for _, event := range sfntest.History(t, r.states, execution) {
		if details := event.TaskFailedEventDetails; details != nil {
			cause = aws.ToString(details.Error) + ": " + aws.ToString(details.Cause)
		}
	}
	if want := "Payment.Declined: permanent failure (Payment.Declined): card declined for o-2"; cause != want {
		t.Fatalf("TaskFailed %q, want %q", cause, want)
	}
	r.settled(t)
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1 (a permanent failure is not retried)", calls.Load())
	}
}

func TestRetriesStayTheQueuesUntilTheLastAttemptReportsFailureOnEmulator(t *testing.T) {
	// HeartbeatSeconds: the redeliveries' heartbeat (is the task still open?) needs it on
	// LocalStack; no answer comes fast enough to race it.
	r := newRig(t, func(job map[string]any) { job["HeartbeatSeconds"] = 30 })
	var receives []int
	var calls atomic.Int32
	r.serve(t, 0, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		calls.Add(1)
		receives = append(receives, message.ReceiveCount) // one message: calls never overlap
		return errors.New("inventory service unavailable")
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-3"})
	done := r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job", "Exhausted")
	if !strings.Contains(aws.ToString(done.Output), "inventory service unavailable") {
		t.Fatalf("execution output %s, want the caught error's cause", aws.ToString(done.Output))
	}
	r.settled(t)
	if !slices.Equal(receives, []int{1, 2, 3}) {
		t.Fatalf("handler ran at receive counts %v, want [1 2 3] (maxReceiveCount 3)", receives)
	}
}

func TestHeartbeatsKeepAJobAliveForThreeTimesHeartbeatSecondsOnEmulator(t *testing.T) {
	r := newRig(t, func(job map[string]any) { job["HeartbeatSeconds"] = 2 })
	r.serve(t, 500*time.Millisecond, sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		// The job's own work takes three HeartbeatSeconds.
		select {
		case <-time.After(6 * time.Second):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return tasktoken.SetOutput(ctx, map[string]string{"shipped": job.Order})
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-4"})
	done := r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job")
	if got := aws.ToString(done.Output); got != `{"shipped":"o-4"}` {
		t.Fatalf("execution output %s, want the handler's output", got)
	}
	r.settled(t)
}

func TestATaskTimeoutCancelsTheHandlerAndEndsTheMessageOnEmulator(t *testing.T) {
	// TimeoutSeconds ends the task (and, uncaught, the execution) while the handler runs;
	// the next heartbeat hears that the task is closed.
	r := newRig(t, func(job map[string]any) { job["TimeoutSeconds"], job["HeartbeatSeconds"] = 2, 1 })
	cause := make(chan error, 1)
	var calls atomic.Int32
	r.serve(t, 300*time.Millisecond, sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		calls.Add(1)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return ctx.Err()
		case <-time.After(time.Minute):
			return errors.New("the handler was never cancelled")
		}
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-5"})
	done := r.finish(t, execution, sfntypes.ExecutionStatusFailed, "Job")
	if aws.ToString(done.Error) != "States.Timeout" {
		t.Fatalf("execution error %q, want States.Timeout", aws.ToString(done.Error))
	}
	if got := testenv.Recv(t, cause, 30*time.Second, "the handler's cancellation"); !errors.Is(got, tasktoken.ErrTaskClosed) {
		t.Fatalf("handler context cause %v, want tasktoken.ErrTaskClosed", got)
	}
	r.settled(t)
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1 (a closed task's message is not retried)", calls.Load())
	}
}

// A job whose task was answered but whose message came back (its delete lost, or the
// worker stopped after answering) is finished at its redelivery without running again.
func TestARedeliveredAnsweredJobSettlesWithoutRunningOnEmulator(t *testing.T) {
	r := newRig(t, nil)
	var calls atomic.Int32
	handler := sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		calls.Add(1)
		return tasktoken.SetOutput(ctx, map[string]string{"charged": job.Order})
	})
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-6"})
	// The first delivery runs and answers, and its message is not deleted: it is
	// visible again at once.
	messages := testenv.Receive(t, r.queues, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(r.queue.URL), MaxNumberOfMessages: 1, VisibilityTimeout: 60,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	}, 1, testenv.ReceiveTimeout)
	first := &sqsworker.Message{ID: aws.ToString(messages[0].MessageId), Body: aws.ToString(messages[0].Body), ReceiveCount: 1, QueueURL: r.queue.URL}
	if err := sqsworker.Chain(handler, r.middleware(t, 0)).Handle(context.Background(), first); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job")
	if _, err := r.queues.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(r.queue.URL), ReceiptHandle: messages[0].ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatalf("ChangeMessageVisibility: %v", err)
	}
	// The worker receives it again (receive count 2).
	r.serve(t, 0, handler)
	r.settled(t)
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1 (the redelivery's task was already answered)", calls.Load())
	}
}

func TestOutputAboveTheLimitIsRefusedWithACatchableFailureOnEmulator(t *testing.T) {
	r := newRig(t, nil)
	setErr := make(chan error, 1)
	r.serve(t, 0, sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		setErr <- tasktoken.SetOutput(ctx, strings.Repeat("x", tasktoken.MaxOutputBytes))
		return nil // the handler ignores SetOutput's error: the middleware refuses all the same
	}))
	execution := sfntest.Start(t, r.states, r.machine, order{Order: "o-7"})
	r.finish(t, execution, sfntypes.ExecutionStatusSucceeded, "Job", "TooLarge")
	if err := testenv.Recv(t, setErr, 30*time.Second, "SetOutput's result"); err == nil || !strings.Contains(err.Error(), tasktoken.ErrorOutputTooLarge) {
		t.Fatalf("SetOutput of 256 KiB + 2 bytes: %v, want a %s failure", err, tasktoken.ErrorOutputTooLarge)
	}
	r.settled(t)
}

// The Lambda host: the same middleware answers the task from a record's outcome.
func TestLambdaHostAnswersTheTaskOnEmulator(t *testing.T) {
	r := newRig(t, nil)
	handler, err := lambda.NewBatchHandler(sqsworker.Chain(sqsworker.JSONHandler(func(ctx context.Context, job order) error {
		if job.Order == "declined" {
			return sqsworker.Permanent("Payment.Declined", errors.New("card declined"))
		}
		return tasktoken.SetOutput(ctx, map[string]string{"charged": job.Order})
	}), r.middleware(t, 0)))
	if err != nil {
		t.Fatal(err)
	}
	succeeded := sfntest.Start(t, r.states, r.machine, order{Order: "o-8"})
	declined := sfntest.Start(t, r.states, r.machine, order{Order: "declined"})
	messages := testenv.Receive(t, r.queues, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(r.queue.URL), MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MaxNumberOfMessages:         10, VisibilityTimeout: 60,
	}, 2, testenv.ReceiveTimeout)
	response, err := handler.Handle(context.Background(), sqsEvent(r.queue.ARN, messages))
	if err != nil || len(response.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, batch item failures %v; want every record finished", err, response.BatchItemFailures)
	}
	done := r.finish(t, succeeded, sfntypes.ExecutionStatusSucceeded, "Job")
	if got := aws.ToString(done.Output); got != `{"charged":"o-8"}` {
		t.Fatalf("execution output %s, want the handler's output", got)
	}
	r.finish(t, declined, sfntypes.ExecutionStatusSucceeded, "Job", "Declined")
}

// sqsEvent is the Lambda event for messages received from queueARN.
func sqsEvent(queueARN string, messages []sqstypes.Message) events.SQSEvent {
	var event events.SQSEvent
	for _, message := range messages {
		record := events.SQSMessage{
			MessageId: aws.ToString(message.MessageId), ReceiptHandle: aws.ToString(message.ReceiptHandle),
			Body: aws.ToString(message.Body), Attributes: message.Attributes, EventSource: "aws:sqs",
			EventSourceARN: queueARN, AWSRegion: "us-east-1", MessageAttributes: map[string]events.SQSMessageAttribute{},
		}
		for name, value := range message.MessageAttributes {
			record.MessageAttributes[name] = events.SQSMessageAttribute{StringValue: value.StringValue, DataType: aws.ToString(value.DataType)}
		}
		event.Records = append(event.Records, record)
	}
	return event
}
