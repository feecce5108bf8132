package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/resourcesfile"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/provision"
)

// emulatorOptions returns the demo's options for a small run (60 messages) on uniquely
// named resources, removed when the test ends, with a 10 s visibility timeout, and logs
// in a directory kept when the test fails.
func emulatorOptions(t *testing.T) options {
	t.Helper()
	sqsClient, dynamoClient := testenv.SQS(t), testenv.DynamoDB(t)
	root, err := repositoryRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	resources, err := provision.LoadFile(filepath.Join(root, resourcesfile.Path))
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
		orders, outboxTable := ordersTables(queue.Name)
		for _, name := range []string{table.Name, orders, outboxTable} {
			_, _ = dynamoClient.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
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
	o.Messages, o.Duplicates, o.Malformed, o.Gone, o.RolledBack = 60, 6, 4, 4, 5
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
		Orders:          o.Messages,
		RolledBack:      o.RolledBack,
		OutboxPublished: o.Messages,
		Phantom:         0,
		Sent:            o.Messages,
		Unique:          o.Messages - o.Duplicates,
		Delivered:       good,
		DeadLettered:    o.Malformed + o.Gone,
		Lost:            0,
		DoubleDelivered: 0,
		// Every duplicate send is suppressed; a killed worker's message whose delivery
		// had completed, or an entry the killed relay sent but did not mark, may add to it.
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
	runDemoOnEmulator(t, storeDynamoDB)
}

// TestDemoOnPostgres is the same run with the orders and their outbox in PostgreSQL
// (localstack/postgres-up): two relays, one SIGKILLed.
func TestDemoOnPostgres(t *testing.T) {
	testenv.PostgresURL(t)
	runDemoOnEmulator(t, storePostgres)
}

func runDemoOnEmulator(t *testing.T, store string) {
	o := emulatorOptions(t)
	o.Store = store
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
	// Unique deliveries per reason. A malformed body has no delivery id for the
	// idempotency layer, so one the killed relay sent but did not mark is dead-lettered
	// twice (both messages with its reason): the messages per reason may exceed these.
	wantReasons := map[string]int{"MalformedBody": o.Malformed, "HTTP410": o.Gone}
	uniqueReasons := map[string]int{}
	for key, reasons := range result.DeadLetters {
		for _, reason := range reasons[1:] {
			if reason != reasons[0] {
				t.Errorf("dead letters of %s have different reasons: %v", key, reasons)
			}
		}
		uniqueReasons[reasons[0]]++
	}
	if !maps.Equal(uniqueReasons, wantReasons) {
		t.Errorf("dead-lettered deliveries by reason = %v, want %v (messages: %v)", uniqueReasons, wantReasons, result.DeadLetterReasons)
	}
	if !strings.Contains(out.String(), "SIGKILLed worker 1") || !strings.Contains(out.String(), "drained and exited 0 after SIGTERM") {
		t.Errorf("the run did not report the kill and the graceful stop")
	}
	checkMetricsLine(t, o, out.String())
	if !strings.Contains(out.String(), "SIGKILLed relay 1") || !strings.Contains(out.String(), "relay 2 stopped with SIGTERM and exited 0") {
		t.Errorf("the run did not report the relay's kill and the other relay's graceful stop")
	}
}

// metricsLine is the line the poller host prints from the survivor's /metrics.
var metricsLine = regexp.MustCompile(`demo: metrics of worker (\d+) \(http://127\.0\.0\.1:\d+/metrics\): received=(\d+) finished delete=(\d+) dead-letter=(\d+) retry=(\d+) retry-after=(\d+) defer=(\d+)\n`)

// checkMetricsLine checks the metrics line of the surviving worker (worker 2) against the
// counts it logged when it stopped ("webhook: stopped", its poller.Stats): both count the
// same events of the same process, and the scrape comes after the queue settled (nothing
// left to receive), so received, deferred and failed (dead-letter, retry and
// retry-after outcomes) agree exactly.
func checkMetricsLine(t *testing.T, o options, out string) {
	t.Helper()
	matches := metricsLine.FindAllStringSubmatch(out, -1)
	if len(matches) != 1 {
		t.Fatalf("want one metrics line (of the surviving worker), found %d", len(matches))
	}
	figures := make([]int64, len(matches[0])-1)
	for i, text := range matches[0][1:] {
		var err error
		if figures[i], err = strconv.ParseInt(text, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	number, received, deleted, deadLetter, retry, retryAfter, deferred := figures[0], figures[1], figures[2], figures[3], figures[4], figures[5], figures[6]
	if number != 2 {
		t.Errorf("metrics line of worker %d, want worker 2 (worker 1 is killed)", number)
	}
	stopped := stoppedLine(t, filepath.Join(o.LogDir, "worker-2.log"))
	if received != stopped.Received || deferred != stopped.Deferred || deadLetter+retry+retryAfter != stopped.Failed {
		t.Errorf("metrics: received=%d defer=%d failed (dead-letter+retry+retry-after)=%d; the worker logged received=%d deferred=%d failed=%d",
			received, deferred, deadLetter+retry+retryAfter, stopped.Received, stopped.Deferred, stopped.Failed)
	}
	// Two thirds of the good deliveries are left to the survivor when worker 1 is killed.
	if deleted == 0 {
		t.Errorf("metrics: delete=0; the survivor delivers what the killed worker left")
	}
}

// stoppedCounts are the counts of the worker's "webhook: stopped" log line.
type stoppedCounts struct {
	Msg      string `json:"msg"`
	Received int64  `json:"received"`
	Failed   int64  `json:"failed"`
	Deferred int64  `json:"deferred"`
}

// stoppedLine returns the counts of the "webhook: stopped" line of the JSON log at path.
func stoppedLine(t *testing.T, path string) stoppedCounts {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range strings.Split(string(data), "\n") {
		var line stoppedCounts
		if json.Unmarshal([]byte(text), &line) == nil && line.Msg == "webhook: stopped" {
			return line
		}
	}
	t.Fatalf("no \"webhook: stopped\" line in %s", path)
	return stoppedCounts{}
}
