package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/provision"
	"github.com/sqsworker/sqsworker/internal/testenv"
)

// emulatorOptions returns the demo's options for a small run (60 messages) on uniquely
// named resources, removed when the test ends, with a 10 s visibility timeout, and logs
// in a directory kept when the test fails.
func emulatorOptions(t *testing.T) options {
	t.Helper()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	resources, err := provision.Load()
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.UniqueName(t)
	queue, table := &resources.Queues[0], &resources.Tables[0]
	queue.Name = prefix + "-q"
	queue.DeadLetterQueue.Name = prefix + "-dlq"
	queue.VisibilityTimeoutSeconds = 10
	table.Name = prefix + "-idem"
	t.Cleanup(func() {
		ctx := context.Background()
		for _, name := range []string{queue.Name, queue.DeadLetterQueue.Name} {
			if output, err := sqsClient.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
				_, _ = sqsClient.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: output.QueueUrl})
			}
		}
		_, _ = dynamoClient.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table.Name)})
	})
	logDir, err := os.MkdirTemp("", "sqsworker-demo-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", logDir)
			return
		}
		_ = os.RemoveAll(logDir)
	})

	o := defaultOptions()
	o.Messages, o.Duplicates, o.Malformed, o.Gone = 60, 6, 4, 4
	o.DeliveryTimeout = 2 * time.Second
	o.Timeout = 2 * time.Minute
	o.Resources, o.LogDir = resources, logDir
	return o
}

// checkSummary checks that nothing is lost, nothing delivered twice, and exactly the
// malformed and 410 deliveries are dead-lettered, as unique deliveries.
func checkSummary(t *testing.T, o options, result report) {
	t.Helper()
	good := o.Messages - o.Duplicates - o.Malformed - o.Gone
	want := summary{
		Sent:            o.Messages,
		Unique:          o.Messages - o.Duplicates,
		Delivered:       good,
		DeadLettered:    o.Malformed + o.Gone,
		Lost:            0,
		DoubleDelivered: 0,
		// Every duplicate send is suppressed; a killed worker's message whose delivery
		// had completed may add to it.
		DuplicatesSuppressed: max(result.DuplicatesSuppressed, o.Duplicates),
	}
	if result.summary != want {
		t.Errorf("summary:\n got %s\nwant %s", result.summary, want)
	}
}

// TestDemoOnEmulator runs the demo's orchestration (build, provision, send, two worker
// processes, SIGKILL of one, drain of the other, dead-letter count) with 60 messages on
// uniquely named resources with a 10 s visibility timeout, and checks that nothing is
// lost, nothing delivered twice, and exactly the malformed and 410 deliveries are
// dead-lettered, each with its reason.
func TestDemoOnEmulator(t *testing.T) {
	o := emulatorOptions(t)
	o.Concurrency = 4
	// The lease (handler timeout) must end before a killed worker's message reappears.
	o.HandlerTimeout, o.DrainTimeout = 5*time.Second, 3*time.Second

	var out strings.Builder
	result, err := run(context.Background(), o, &out)
	t.Log("\n" + out.String() + result.summary.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkSummary(t, o, result)
	wantReasons := map[string]int{"MalformedBody": o.Malformed, "HTTP410": o.Gone}
	if len(result.DeadLetterReasons) != len(wantReasons) {
		t.Errorf("dead-letter reasons = %v, want %v", result.DeadLetterReasons, wantReasons)
	}
	for reason, count := range wantReasons {
		if result.DeadLetterReasons[reason] != count {
			t.Errorf("dead-letter reasons = %v, want %v", result.DeadLetterReasons, wantReasons)
			break
		}
	}
	if !strings.Contains(out.String(), "SIGKILLed worker 1") || !strings.Contains(out.String(), "drained and exited 0 after SIGTERM") {
		t.Errorf("the run did not report the kill and the graceful stop")
	}
}
