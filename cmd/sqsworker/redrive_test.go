package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testenv"
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
