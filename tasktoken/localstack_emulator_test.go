package tasktoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/testing/sfntest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// callbackMachine is a state machine with one waitForTaskToken task sending its input
// and token to queueURL (the token both in the body's "taskToken" field and in the
// "TaskToken" message attribute), with HeartbeatSeconds heartbeat, whose failures
// "Payment.Declined" and "States.Timeout" are caught into states of those names; the
// caught timeout then waits 30 s, so the execution is still running when the test
// answers the timed-out token.
func callbackMachine(queueURL string, heartbeatSeconds int) map[string]any {
	return map[string]any{
		"StartAt": "Job",
		"States": map[string]any{
			"Job": map[string]any{
				"Type":             "Task",
				"Resource":         "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
				"HeartbeatSeconds": heartbeatSeconds,
				"Parameters": map[string]any{
					"QueueUrl":    queueURL,
					"MessageBody": map[string]any{"job.$": "$", "taskToken.$": "$$.Task.Token"},
					"MessageAttributes": map[string]any{
						"TaskToken": map[string]any{"DataType": "String", "StringValue.$": "$$.Task.Token"},
					},
				},
				"Catch": []any{
					map[string]any{"ErrorEquals": []string{"Payment.Declined"}, "Next": "Declined"},
					map[string]any{"ErrorEquals": []string{"States.Timeout"}, "Next": "TimedOut"},
				},
				"End": true,
			},
			"Declined": map[string]any{"Type": "Pass", "End": true},
			"TimedOut": map[string]any{"Type": "Wait", "Seconds": 30, "End": true},
		},
	}
}

// receiveToken receives the task's message and returns its token, checking that the
// body field and the attribute carry the same one.
func receiveToken(t *testing.T, client *sqs.Client, queueURL string) string {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(queueURL),
		MessageAttributeNames: []string{"All"},
		VisibilityTimeout:     60,
	}, 1, testenv.ReceiveTimeout)
	var body struct {
		TaskToken string `json:"taskToken"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(messages[0].Body)), &body); err != nil || body.TaskToken == "" {
		t.Fatalf("body %q carries no taskToken: %v", aws.ToString(messages[0].Body), err)
	}
	attribute := messages[0].MessageAttributes["TaskToken"]
	if got := aws.ToString(attribute.StringValue); got != body.TaskToken {
		t.Fatalf("TaskToken attribute %q, body field %q", got, body.TaskToken)
	}
	return body.TaskToken
}

func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}

// The local Step Functions runs the callback pattern against the local SQS: the task's
// message arrives with its token, heartbeats keep the state alive past HeartbeatSeconds,
// SendTaskSuccess ends it with the output, and answering the token again is refused.
func TestLocalStepFunctionsServesTheCallbackPatternOnEmulator(t *testing.T) {
	states := sfntest.Require(t)
	queues := testenv.SQS(t)
	queue := testenv.NewQueue(t, queues, testenv.QueueOptions{NoDeadLetterQueue: true})
	machine := sfntest.NewStateMachine(t, states, callbackMachine(sfntest.Target(t, queue), 2))
	ctx := context.Background()

	execution := sfntest.Start(t, states, machine, map[string]string{"order": "o-1"})
	token := receiveToken(t, queues, queue.URL)
	// LocalStack answers InvalidToken in the moment between sending the task's message
	// and starting its heartbeat clock (localstack/README.md; seen once in CI): the first
	// heartbeat waits for the clock, then every one must be taken.
	testenv.Eventually(t, 5*time.Second, "the task's heartbeat clock started", func() bool {
		_, err := states.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
		if err != nil && errorCode(err) != "InvalidToken" {
			t.Fatalf("SendTaskHeartbeat: %v", err)
		}
		return err == nil
	})
	// Three HeartbeatSeconds with a heartbeat every half of one.
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err := states.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
			t.Fatalf("SendTaskHeartbeat: %v", err)
		}
	}
	if _, err := states.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{"charged":true}`)}); err != nil {
		t.Fatalf("SendTaskSuccess: %v", err)
	}
	done := sfntest.Finished(t, states, execution, 30*time.Second)
	if done.Status != sfntypes.ExecutionStatusSucceeded || aws.ToString(done.Output) != `{"charged":true}` {
		t.Fatalf("execution %s with output %q, want SUCCEEDED with the task's output", done.Status, aws.ToString(done.Output))
	}
	// The execution has ended, so LocalStack no longer knows the token: InvalidToken
	// (AWS answers TaskTimedOut for a token whose task is closed).
	_, err := states.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)})
	if code := errorCode(err); code != "InvalidToken" && code != "TaskTimedOut" {
		t.Fatalf("answering an answered token: %v, want InvalidToken or TaskTimedOut", err)
	}
}

// SendTaskFailure's error name reaches the state's Catch.
func TestLocalStepFunctionsCatchesTaskFailureOnEmulator(t *testing.T) {
	states := sfntest.Require(t)
	queues := testenv.SQS(t)
	queue := testenv.NewQueue(t, queues, testenv.QueueOptions{NoDeadLetterQueue: true})
	machine := sfntest.NewStateMachine(t, states, callbackMachine(sfntest.Target(t, queue), 30))

	execution := sfntest.Start(t, states, machine, map[string]string{"order": "o-2"})
	token := receiveToken(t, queues, queue.URL)
	if _, err := states.SendTaskFailure(context.Background(), &sfn.SendTaskFailureInput{
		TaskToken: aws.String(token), Error: aws.String("Payment.Declined"), Cause: aws.String("card declined"),
	}); err != nil {
		t.Fatalf("SendTaskFailure: %v", err)
	}
	done := sfntest.Finished(t, states, execution, 30*time.Second)
	if entered := sfntest.EnteredStates(t, states, execution); done.Status != sfntypes.ExecutionStatusSucceeded || !slices.Equal(entered, []string{"Job", "Declined"}) {
		t.Fatalf("execution %s through %v, want SUCCEEDED through [Job Declined]", done.Status, entered)
	}
}

// A task without heartbeats times out after HeartbeatSeconds (States.Timeout; here
// uncaught, so the execution fails), and its token is refused from then on: LocalStack
// answers InvalidToken once the execution has ended, AWS TaskTimedOut. (While a caught
// timeout lets the execution run on, LocalStack 4.14 accepts the token's answers and
// ignores them: localstack/README.md.)
func TestLocalStepFunctionsTimesOutASilentTaskOnEmulator(t *testing.T) {
	states := sfntest.Require(t)
	queues := testenv.SQS(t)
	queue := testenv.NewQueue(t, queues, testenv.QueueOptions{NoDeadLetterQueue: true})
	machine := callbackMachine(sfntest.Target(t, queue), 1)
	job := machine["States"].(map[string]any)["Job"].(map[string]any)
	job["Catch"] = []any{}
	arn := sfntest.NewStateMachine(t, states, machine)
	ctx := context.Background()

	execution := sfntest.Start(t, states, arn, map[string]string{"order": "o-3"})
	token := receiveToken(t, queues, queue.URL)
	done := sfntest.Finished(t, states, execution, 30*time.Second)
	if done.Status != sfntypes.ExecutionStatusFailed || aws.ToString(done.Error) != "States.Timeout" {
		t.Fatalf("execution %s with error %q, want FAILED with States.Timeout", done.Status, aws.ToString(done.Error))
	}
	_, err := states.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	if code := errorCode(err); code != "InvalidToken" && code != "TaskTimedOut" {
		t.Fatalf("heartbeat of a timed-out task: %v (code %q), want InvalidToken or TaskTimedOut", err, code)
	}
}
