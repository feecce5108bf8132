// Package sfntest gives tests a Step Functions client on the local emulator (LocalStack's
// Step Functions, localstack/up) and state machines that are removed when the test ends.
//
// The local Step Functions sends a waitForTaskToken task's message only to LocalStack's
// own SQS. On the ElasticMQ lane a state machine therefore names a LocalStack queue that
// [Target] forwards to the test's ElasticMQ queue, so the worker side (receives,
// visibility, heartbeats, deletes, dead letters) runs on ElasticMQ while the state
// machine and its task tokens stay LocalStack's (localstack/README.md, "Step Functions on
// LocalStack").
package sfntest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// RoleARN is the execution role the test state machines name. LocalStack assumes it
// through its STS without checking any policy; on AWS it needs sqs:SendMessage on the
// worker queue (infra/terraform/modules/task-token-state-machine).
const RoleARN = "arn:aws:iam::000000000000:role/sqsworker-test-state-machine"

// Require returns a Step Functions client for LocalStack. It fails the test when
// AWS_ENDPOINT_URL_SFN is not set (localstack/env sets it, to LocalStack on both lanes).
func Require(t testing.TB) *sfn.Client {
	t.Helper()
	cfg := testenv.AWSConfig(t)
	if os.Getenv("AWS_ENDPOINT_URL_SFN") == "" {
		t.Fatal("sfntest: AWS_ENDPOINT_URL_SFN is not set; run the tests with `make test`, which sets it from localstack/env")
	}
	return sfn.NewFromConfig(cfg)
}

// Target returns the queue URL a test's state machine names to send its task-token jobs
// to queue (a queue of testenv.SQS). On LocalStack that is queue.URL. On ElasticMQ, whose
// queues the local Step Functions cannot reach, it is a LocalStack queue made for the
// test, and a forwarder owned by the test moves each message there, body and message
// attributes as they are, to queue.URL (send, then delete: one copy each), until the test
// ends. The forwarder's hop adds a few milliseconds to a job's way to its queue;
// everything the worker does with the message happens on ElasticMQ.
func Target(t testing.TB, queue testenv.Queue) string {
	t.Helper()
	if testenv.SQSEmulator() != testenv.ElasticMQ {
		return queue.URL
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_SFN") // LocalStack: the same process serves its SQS
	if endpoint == "" {
		t.Fatal("sfntest: AWS_ENDPOINT_URL_SFN is not set; run the tests with `make test`, which sets it from localstack/env")
	}
	localstack := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	inbox := testenv.NewQueue(t, localstack, testenv.QueueOptions{NoDeadLetterQueue: true})
	elasticmq := testenv.SQS(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		forward(ctx, t, localstack, inbox.URL, elasticmq, queue.URL)
	}()
	// Registered after the inbox's deletion, so it runs before it.
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return inbox.URL
}

// forward moves every message of from (on source) to to (on target) until ctx ends.
func forward(ctx context.Context, t testing.TB, source *sqs.Client, from string, target *sqs.Client, to string) {
	for ctx.Err() == nil {
		output, err := source.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(from),
			MaxNumberOfMessages:   10,
			WaitTimeSeconds:       1,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				t.Logf("sfntest: forwarder: receiving from %s: %v", from, err)
				time.Sleep(100 * time.Millisecond) // a retry's pause, not a wait for a condition
			}
			continue
		}
		for _, message := range output.Messages {
			if err := forwardOne(ctx, source, from, target, to, message); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("sfntest: forwarder: %v", err)
			}
		}
	}
}

// forwardOne sends message to to, then deletes it from from.
func forwardOne(ctx context.Context, source *sqs.Client, from string, target *sqs.Client, to string, message sqstypes.Message) error {
	if _, err := target.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(to),
		MessageBody:       message.Body,
		MessageAttributes: message.MessageAttributes,
	}); err != nil {
		return errors.Join(errors.New("sending a task's message to "+to), err)
	}
	if _, err := source.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(from), ReceiptHandle: message.ReceiptHandle}); err != nil {
		return errors.Join(errors.New("deleting a forwarded message from "+from), err)
	}
	return nil
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
