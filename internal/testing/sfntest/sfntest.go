// Package sfntest gives tests a Step Functions client on the local emulator (LocalStack's
// Step Functions, localstack/up) and state machines that are removed when the test ends.
//
// The local Step Functions sends a waitForTaskToken task's message only to LocalStack's
// own SQS, so on the ElasticMQ run every test that uses it skips, naming the reason
// ([Require]); the test summary lists each such skip.
package sfntest

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// RoleARN is the execution role the test state machines name. LocalStack assumes it
// through its STS without checking any policy; on AWS it needs sqs:SendMessage on the
// worker queue (infra/terraform/modules/task-token-state-machine).
const RoleARN = "arn:aws:iam::000000000000:role/sqsworker-test-state-machine"

// Require skips the test on the ElasticMQ run (testenv.ElasticMQHasNoStepFunctions) and
// returns a Step Functions client for LocalStack. It fails the test when
// AWS_ENDPOINT_URL_SFN is not set (localstack/env sets it).
func Require(t testing.TB) *sfn.Client {
	t.Helper()
	testenv.SkipOn(t, testenv.ElasticMQHasNoStepFunctions)
	cfg := testenv.AWSConfig(t)
	if os.Getenv("AWS_ENDPOINT_URL_SFN") == "" {
		t.Fatal("sfntest: AWS_ENDPOINT_URL_SFN is not set; run the tests with `make test`, which sets it from localstack/env")
	}
	return sfn.NewFromConfig(cfg)
}

// NewStateMachine creates a uniquely named standard state machine with the ASL
// definition (any value that marshals to the definition's JSON) and deletes it when the
// test ends.
func NewStateMachine(t testing.TB, client *sfn.Client, definition any) string {
	t.Helper()
	text, ok := definition.(string)
	if !ok {
		encoded, err := json.Marshal(definition)
		if err != nil {
			t.Fatalf("sfntest: encoding the definition: %v", err)
		}
		text = string(encoded)
	}
	name := testenv.UniqueName(t)
	output, err := client.CreateStateMachine(context.Background(), &sfn.CreateStateMachineInput{
		Name:       aws.String(name),
		Definition: aws.String(text),
		RoleArn:    aws.String(RoleARN),
	})
	if err != nil {
		t.Fatalf("sfntest: creating state machine %s: %v", name, err)
	}
	arn := aws.ToString(output.StateMachineArn)
	t.Cleanup(func() {
		_, _ = client.DeleteStateMachine(context.Background(), &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(arn)})
	})
	return arn
}

// Start starts an execution of stateMachine with input (marshalled to JSON) and returns
// its ARN.
func Start(t testing.TB, client *sfn.Client, stateMachine string, input any) string {
	t.Helper()
	encoded, err := json.Marshal(input)
	if err != nil {
		t.Fatalf("sfntest: encoding the input: %v", err)
	}
	output, err := client.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(stateMachine),
		Input:           aws.String(string(encoded)),
	})
	if err != nil {
		t.Fatalf("sfntest: starting an execution of %s: %v", stateMachine, err)
	}
	return aws.ToString(output.ExecutionArn)
}

// Finished waits until the execution is no longer RUNNING and returns its description;
// it fails the test when timeout passes first.
func Finished(t testing.TB, client *sfn.Client, execution string, timeout time.Duration) *sfn.DescribeExecutionOutput {
	t.Helper()
	var last *sfn.DescribeExecutionOutput
	testenv.Eventually(t, timeout, "execution "+execution+" to finish", func() bool {
		output, err := client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execution)})
		if err != nil {
			t.Logf("sfntest: describing %s: %v", execution, err)
			return false
		}
		last = output
		return output.Status != sfntypes.ExecutionStatusRunning
	})
	return last
}

// History returns the execution's events, oldest first.
func History(t testing.TB, client *sfn.Client, execution string) []sfntypes.HistoryEvent {
	t.Helper()
	var events []sfntypes.HistoryEvent
	paginator := sfn.NewGetExecutionHistoryPaginator(client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(execution)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(context.Background())
		if err != nil {
			t.Fatalf("sfntest: reading the history of %s: %v", execution, err)
		}
		events = append(events, page.Events...)
	}
	return events
}

// EnteredStates returns the names of the states the execution entered, in order.
func EnteredStates(t testing.TB, client *sfn.Client, execution string) []string {
	t.Helper()
	var names []string
	for _, event := range History(t, client, execution) {
		if details := event.StateEnteredEventDetails; details != nil {
			names = append(names, aws.ToString(details.Name))
		}
	}
	return names
}
