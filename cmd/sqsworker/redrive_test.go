package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/redrive"
)

// `redrive move` beside a worker that still fails the job (issue 19, item 4: one message,
// "Moved 1923 of 1926", x-redrive-count=1923): the three dead letters move once each,
// the command ends, and their copies come back to stay, with x-redrive-count 1.
func TestCLIRedriveMoveBesideAFailingWorker(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	server, err := poller.New(client, poller.Config{QueueURL: queue.URL, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)},
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			return sqsworker.Permanent("Broken", errors.New("the bug is not fixed yet"))
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitTimeout)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	const n = 3
	for i := range n {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queue.URL), MessageBody: aws.String(fmt.Sprintf(`{"id":"j%d"}`, i)),
		}); err != nil {
			t.Fatal(err)
		}
	}
	dlqHolds := func(what string) {
		testenv.Eventually(t, testenv.WaitTimeout, what, func() bool {
			visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
			return visible+inFlight == n
		})
	}
	dlqHolds("the worker dead-lettered the 3 jobs")

	dlq := queueName(queue.DeadLetterQueueURL)
	dry := want(t, exitOK, "redrive", "move", "--from", dlq, "--dry-run")
	if !strings.HasPrefix(dry.stdout, "Dry run: 3 of 3 messages received from "+dlq+" would move") {
		t.Fatalf("dry run printed:\n%s", dry.stdout)
	}
	report := decode[moveReport](t, want(t, exitOK, "redrive", "move", "--from", dlq, "-o", "json"))
	if report.Result.Moved != n || report.Result.Received != n || report.Result.MoveID == "" {
		t.Fatalf("move result = %+v, want the 3 messages moved once each", report.Result)
	}

	dlqHolds("the 3 copies back in the dead-letter queue")
	back := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.DeadLetterQueueURL), VisibilityTimeout: 60,
		MessageAttributeNames: []string{"All"}}, n, testenv.ReceiveTimeout)
	bodies := map[string]bool{}
	for _, message := range back {
		bodies[aws.ToString(message.Body)] = true
		if count := message.MessageAttributes[redrive.AttributeRedriveCount]; aws.ToString(count.StringValue) != "1" {
			t.Errorf("%s came back with %s=%q, want 1", aws.ToString(message.Body), redrive.AttributeRedriveCount, aws.ToString(count.StringValue))
		}
		if reason := message.MessageAttributes[sqsworker.AttributeFailureReason]; aws.ToString(reason.StringValue) != "Broken" {
			t.Errorf("%s came back with failure-reason %q, want the worker's copy (Broken)", aws.ToString(message.Body), aws.ToString(reason.StringValue))
		}
	}
	if len(back) != n || len(bodies) != n {
		t.Fatalf("the dead-letter queue holds %d messages (%d bodies), want each job once", len(back), len(bodies))
	}
}

// `redrive start` without --to on a dead-letter queue that holds the worker's own copies
// (issue 19, item 7: the task FAILED with a bare "AttributeError" on LocalStack). With
// one queue whose redrive policy targets the DLQ, the task is sent there and moves every
// message, the worker's copies and the redrive policy's alike.
func TestCLIRedriveStartWorkerCopies(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	deadLetterThroughReceives(t, client, queue, 1) // {"id":"n0"}, moved by the redrive policy
	deadLetter(t, client, queue.URL, "w1", `{"id":"w1"}`, "HTTP410")
	deadLetter(t, client, queue.URL, "w2", `{"id":"w2"}`, "MalformedBody")
	dlq := queueName(queue.DeadLetterQueueURL)

	r := want(t, exitOK, "redrive", "start", dlq, "--interval", "100ms")
	if wantText := fmt.Sprintf("Started move task on %s -> %s (the queue whose redrive policy targets %s; --to chooses another)", dlq, queueName(queue.URL), dlq); !strings.Contains(r.stdout, wantText) {
		t.Fatalf("stdout %q, want %q", r.stdout, wantText)
	}
	moved := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), VisibilityTimeout: 60}, 3, testenv.ReceiveTimeout)
	bodies := map[string]bool{}
	for _, message := range moved {
		bodies[aws.ToString(message.Body)] = true
	}
	if len(moved) != 3 || !bodies[`{"id":"n0"}`] || !bodies[`{"id":"w1"}`] || !bodies[`{"id":"w2"}`] {
		t.Fatalf("%s received %v, want n0, w1 and w2 once each", queueName(queue.URL), bodies)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible != 0 || inFlight != 0 {
		t.Fatalf("the dead-letter queue still holds %d visible and %d in flight", visible, inFlight)
	}
}

// With two queues sharing the dead-letter queue, `redrive start` without --to leaves the
// routing to SQS. A worker's copy has no origin SQS knows: on LocalStack the task FAILS
// (reason "AttributeError"), and the error now names the cause and the fix; nothing is
// lost. ElasticMQ 1.7.1 sends every message of such a task to one source queue
// (testenv.ElasticMQRedrivesToOneSourceQueue), the worker's copy included.
func TestCLIRedriveStartSharedDeadLetterQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	q := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	// The second queue gets its redrive policy at creation: ElasticMQ 1.7.1's
	// ListDeadLetterSourceQueues misses a policy set later (localstack/README.md).
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": q.DeadLetterQueueARN, "maxReceiveCount": 1})
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(queueName(q.URL) + "-2"), Attributes: map[string]string{"RedrivePolicy": string(policy)},
	})
	if err != nil {
		t.Fatal(err)
	}
	q2 := aws.ToString(created.QueueUrl)
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: created.QueueUrl})
	})
	deadLetterThroughReceives(t, client, q, 1) // {"id":"n0"}, moved from q by the redrive policy
	deadLetter(t, client, q.URL, "w1", `{"id":"w1"}`, "HTTP410")
	dlq := queueName(q.DeadLetterQueueURL)

	r := cli(t, nil, "redrive", "start", dlq, "--interval", "100ms")
	if !strings.Contains(r.stdout, "-> original source queues") {
		t.Fatalf("stdout %q, want the task without a destination", r.stdout)
	}
	first, _ := testenv.Counts(t, client, q.URL)
	second, _ := testenv.Counts(t, client, q2)
	if testenv.SQSEmulator() == testenv.ElasticMQ {
		if r.code != exitOK {
			t.Fatalf("exit %d on ElasticMQ, want 0 (it moves every message to one source queue)\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if first+second != 2 || (first != 0 && second != 0) {
			t.Fatalf("q holds %d and q2 %d, want both messages in one of them", first, second)
		}
		return
	}
	if r.code != exitError {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, text := range []string{"message move task failed", "AttributeError", "dead-lettered by the worker itself, not by SQS's redrive policy",
		"Pass --to QUEUE, or use 'sqsworker redrive move --from " + dlq + " --to QUEUE'", "attr:failure-source-queue=ARN"} {
		if !strings.Contains(r.stderr, text) {
			t.Errorf("stderr %q, want %q", r.stderr, text)
		}
	}
	// Nothing is lost: n0 went back to q or is still in the dead-letter queue, and so is
	// the worker's copy (LocalStack leaves it in flight for its visibility timeout).
	visible, inFlight := testenv.Counts(t, client, q.DeadLetterQueueURL)
	if visible+inFlight+first != 2 || visible+inFlight < 1 || second != 0 {
		t.Fatalf("the dead-letter queue holds %d+%d, q %d, q2 %d: want 2 in all, w1 still in the dead-letter queue", visible, inFlight, first, second)
	}
}
