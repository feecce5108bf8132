package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// binary is the sqsworker command built once for all tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sqsworker-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sqsworker")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sqsworker:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary with args and the test's environment plus env.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sqsworker %s did not finish within 60 s and was killed\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	code := 0
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running sqsworker %v: %v", args, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// want runs the binary and fails unless it exits with code.
func want(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := cli(t, nil, args...)
	if r.code != code {
		t.Fatalf("sqsworker %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// decode parses a command's JSON output.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var value T
	if err := json.Unmarshal([]byte(r.stdout), &value); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, r.stdout)
	}
	return value
}

func TestCLIUsageAndHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   string
		emulator bool
	}{
		{name: "unknown flag", args: []string{"stats", "q", "--bogus"}, code: exitUsage, stderr: "unknown flag: --bogus"},
		{name: "unknown command", args: []string{"bogus"}, code: exitUsage, stderr: `unknown command "bogus"`},
		{name: "unknown sub-command", args: []string{"redrive", "bogus"}, code: exitUsage, stderr: `unknown command "bogus" for "sqsworker redrive"`},
		{name: "group alone", args: []string{"dlq"}, code: exitUsage, stderr: "needs a command: list, peek"},
		{name: "missing argument", args: []string{"stats"}, code: exitUsage, stderr: "accepts 1 arg(s)"},
		{name: "bad output", args: []string{"-o", "yaml", "queues"}, code: exitUsage, stderr: `--output "yaml"`},
		{name: "bad filter", args: []string{"redrive", "move", "--from", "x", "--filter", "body:x"}, code: exitUsage, stderr: "redrive: filter"},
		{name: "move without --from", args: []string{"redrive", "move"}, code: exitUsage, stderr: `"from" not set`},
		{name: "rate above 500", args: []string{"redrive", "start", "x", "--rate", "501"}, code: exitUsage, stderr: "1 to 500"},
		{name: "peek visibility above 15m", args: []string{"dlq", "peek", "x", "--visibility", "13h"}, code: exitUsage, stderr: "visibility timeout 13h0m0s is outside 1s to 15m0s"},
		{name: "peek visibility below 1s", args: []string{"dlq", "list", "x", "--visibility", "500ms"}, code: exitUsage, stderr: "outside 1s to 15m0s"},
		{name: "send without body", args: []string{"send", "q"}, code: exitUsage, stderr: "--body and --file"},
		{name: "table missing", args: []string{"idempotency", "get", "k"}, code: exitUsage, stderr: `"table" not set`},
		{name: "unknown queue", args: []string{"stats", "no-such-queue-" + testenv.UniqueName(t)}, code: exitError, stderr: "queue does not exist", emulator: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.emulator {
				testenv.AWSConfig(t) // asks the emulator, so it needs one
			}
			r := want(t, tc.code, tc.args...)
			if !strings.Contains(r.stderr, tc.stderr) || !strings.HasPrefix(r.stderr, "sqsworker: ") {
				t.Fatalf("stderr = %q, want it to start with sqsworker: and contain %q", r.stderr, tc.stderr)
			}
		})
	}
	commands := [][]string{
		{}, {"queues"}, {"stats"}, {"dlq"}, {"dlq", "peek"}, {"dlq", "list"}, {"redrive"}, {"redrive", "start"},
		{"redrive", "status"}, {"redrive", "cancel"}, {"redrive", "move"}, {"send"}, {"idempotency"},
		{"idempotency", "get"}, {"idempotency", "delete"}, {"create"}, {"create", "queue"}, {"create", "table"},
		{"jobs"}, {"jobs", "get"}, {"jobs", "cancel"}, {"batches"}, {"batches", "show"},
	}
	for _, command := range commands {
		t.Run("help "+strings.Join(command, " "), func(t *testing.T) {
			t.Parallel()
			r := want(t, exitOK, append(command, "--help")...)
			if !strings.Contains(r.stdout, "Usage:") {
				t.Fatalf("--help printed no usage:\n%s", r.stdout)
			}
		})
	}
}

func TestCLISendStatsPeek(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 4})

	sent := decode[sendReport](t, want(t, exitOK, "send", queue.URL, "--body", `{"id":"s1"}`, "--attr", "type=invoice", "--attr", "n:Number=3", "-o", "json"))
	if len(sent.Sent) != 1 || sent.Sent[0].ID == "" {
		t.Fatalf("send report = %+v", sent)
	}
	file := filepath.Join(t.TempDir(), "messages.jsonl")
	lines := `{"body": {"id": "f1"}, "attributes": {"type": "refund"}}` + "\n\n" + `{"body": "plain text"}` + "\n" + `{"body": {"id": "f3"}}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	name := queueName(queue.URL)
	r := want(t, exitOK, "send", name, "--file", file)
	if r.stdout != fmt.Sprintf("Sent 3 of 4 messages to %s.\n", name) {
		t.Fatalf("send --file printed %q", r.stdout)
	}

	stats := decode[queueStats](t, want(t, exitOK, "stats", name, "-o", "json"))
	if stats.Visible != 4 || stats.InFlight != 0 || stats.Delayed != 0 || stats.RedrivePolicy.MaxReceiveCount != 4 ||
		stats.DeadLetterQueue.Depth != 0 || stats.DeadLetterQueue.URL != queue.DeadLetterQueueURL {
		t.Fatalf("stats = %+v", stats)
	}
	if stats.OldestAgeSeconds != nil || !strings.Contains(stats.OldestAgeNote, "CloudWatch metric") {
		t.Fatalf("oldest age = %v (%q), want unknown with the reason", stats.OldestAgeSeconds, stats.OldestAgeNote)
	}
	// Pointed at the emulator, which serves no CloudWatch here, the age is unknown and says why.
	r = cli(t, []string{"AWS_ENDPOINT_URL_CLOUDWATCH=" + os.Getenv("AWS_ENDPOINT_URL_SQS")}, "stats", name)
	if r.code != exitOK || !strings.Contains(r.stdout, "Oldest message:  unknown: CloudWatch GetMetricStatistics failed") {
		t.Fatalf("stats with a CloudWatch endpoint: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = want(t, exitOK, "stats", name, "--watch=10ms", "--count", "2")
	if strings.Count(r.stdout, "Visible:         4") != 2 {
		t.Fatalf("--watch --count 2 printed:\n%s", r.stdout)
	}
	listed := decode[[]queueStats](t, want(t, exitOK, "queues", "--prefix", name, "-o", "json"))
	if len(listed) != 2 || listed[0].URL != queue.URL || listed[1].URL != queue.DeadLetterQueueURL {
		t.Fatalf("queues = %+v, want the queue and its DLQ", listed)
	}

	r = want(t, exitError, "dlq", "peek", name)
	if !strings.Contains(r.stderr, "has a redrive policy (maxReceiveCount 4") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("peek without --force: stderr %q", r.stderr)
	}
	peek := decode[struct {
		Messages     []struct{ Body string } `json:"messages"`
		ReceivesUsed int                     `json:"receives_used"`
		Released     int                     `json:"released"`
	}](t, want(t, exitOK, "dlq", "peek", name, "--force", "-o", "json"))
	if len(peek.Messages) != 4 || peek.ReceivesUsed != 4 || peek.Released != 4 {
		t.Fatalf("peek --force = %+v", peek)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible != 4 || inFlight != 0 {
		t.Fatalf("after the peek %d visible, %d in flight; want 4 released", visible, inFlight)
	}
}

// deadLetter puts a message in queueURL's DLQ the way a host does (failure attributes).
func deadLetter(t *testing.T, client *sqs.Client, queueURL, id, body, reason string) {
	t.Helper()
	message := &sqsworker.Message{ID: id, Body: body, ReceiveCount: 3, GroupID: "g1"}
	outcome := sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: reason, Err: fmt.Errorf("webhook answered %s", reason)}
	testenv.DeadLetter(t, client, queueURL, message, outcome)
}

func TestCLIRedriveMove(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	for i, reason := range []string{"HTTP410", "Timeout", "HTTP410", "Timeout", "HTTP410"} {
		deadLetter(t, client, queue.URL, "m"+strconv.Itoa(i), fmt.Sprintf(`{"id":"m%d"}`, i), reason)
	}
	dlq := queueName(queue.DeadLetterQueueURL)

	list := want(t, exitOK, "dlq", "list", dlq)
	if strings.Count(list.stdout, "answered HTTP410") != 3 || strings.Count(list.stdout, "answered Timeout") != 2 || !strings.Contains(list.stdout, "5 messages seen, 5 receives used, 5 released") {
		t.Fatalf("dlq list:\n%s", list.stdout)
	}
	type report struct {
		DryRun bool `json:"dry_run"`
		Result struct {
			Received  int `json:"received"`
			Skipped   int `json:"skipped"`
			Moved     int `json:"moved"`
			WouldMove int `json:"would_move"`
		} `json:"result"`
	}
	dry := decode[report](t, want(t, exitOK, "redrive", "move", "--from", dlq, "--filter", "attr:failure-reason=HTTP410", "--dry-run", "-o", "json"))
	if !dry.DryRun || dry.Result.WouldMove != 3 || dry.Result.Skipped != 2 || dry.Result.Moved != 0 {
		t.Fatalf("dry run = %+v", dry)
	}
	// No --to: the one queue whose redrive policy targets the DLQ.
	r := want(t, exitOK, "redrive", "move", "--from", dlq, "--filter", "reason:HTTP410")
	wantLine := fmt.Sprintf("Moved 3 of 5 messages received from %s to %s, 2 skipped by the filter", dlq, queueName(queue.URL))
	if !strings.HasPrefix(r.stdout, wantLine) {
		t.Fatalf("move printed %q, want %q...", r.stdout, wantLine)
	}
	if visible, _ := testenv.Counts(t, client, queue.URL); visible != 3 {
		t.Fatalf("source queue holds %d, want the 3 HTTP410 messages", visible)
	}
	if visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible != 2 {
		t.Fatalf("DLQ holds %d, want the 2 Timeout messages", visible)
	}

	// A message larger than the destination allows stays: exit 3 (partial).
	t.Run("too large for the destination", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention)
		small := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
		if _, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(small.URL), Attributes: map[string]string{"MaximumMessageSize": "1024"},
		}); err != nil {
			t.Fatal(err)
		}
		deadLetter(t, client, queue.URL, "big", `{"id":"big","pad":"`+strings.Repeat("x", 1100)+`"}`, "Timeout")
		r := want(t, exitPartial, "redrive", "move", "--from", dlq, "--to", small.URL, "--filter", "json:id=big")
		if !strings.Contains(r.stdout, "Left in "+dlq+", larger than 1024 bytes") {
			t.Fatalf("partial move printed:\n%s", r.stdout)
		}
	})
}

func TestCLINativeRedrive(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	deadLetterThroughReceives(t, client, queue, 5)
	dlq := queueName(queue.DeadLetterQueueURL)

	want(t, exitError, "redrive", "cancel", dlq) // nothing running
	task := decode[struct {
		Status string `json:"status"`
		Moved  int    `json:"moved"`
		ToMove int    `json:"to_move"`
	}](t, want(t, exitOK, "redrive", "start", dlq, "--interval", "100ms", "-o", "json"))
	if task.Status != "COMPLETED" || task.Moved != 5 {
		t.Fatalf("task = %+v, want COMPLETED with 5 moved", task)
	}
	if visible, _ := testenv.Counts(t, client, queue.URL); visible != 5 {
		t.Fatalf("source holds %d, want 5", visible)
	}
	t.Run("to move taken at the start", func(t *testing.T) {
		testenv.SkipOn(t, testenv.ElasticMQMoveTaskToMoveCountsDown)
		if task.ToMove != 5 {
			t.Errorf("task = %+v, want 5 to move", task)
		}
		status := want(t, exitOK, "redrive", "status", dlq)
		if !strings.Contains(status.stdout, "COMPLETED  5      5") {
			t.Fatalf("status:\n%s", status.stdout)
		}
	})

	// Again, slowly, to see the one-active-task rule and a cancel.
	deadLetterThroughReceivesAgain(t, client, queue, 5)
	want(t, exitOK, "redrive", "start", dlq, "--rate", "1", "--no-wait")
	r := want(t, exitError, "redrive", "start", dlq)
	if !strings.Contains(r.stderr, "only one active move task per source queue") {
		t.Fatalf("second start: %s", r.stderr)
	}
	t.Run("cancel --wait", func(t *testing.T) {
		if testenv.SQSEmulator() == testenv.ElasticMQ {
			// The cancel works; the wait then reports the vanished task, never hangs.
			r := want(t, exitError, "redrive", "cancel", dlq, "--wait")
			if !strings.Contains(r.stderr, "no longer listed by ListMessageMoveTasks") {
				t.Errorf("cancel --wait on ElasticMQ: %s", r.stderr)
			}
			testenv.SkipOn(t, testenv.ElasticMQForgetsCancelledMoveTasks)
		}
		cancelled := decode[struct{ Status string }](t, want(t, exitOK, "redrive", "cancel", dlq, "--wait", "-o", "json"))
		if cancelled.Status != "CANCELLED" {
			t.Fatalf("cancel --wait: status %s", cancelled.Status)
		}
	})
}

// deadLetterThroughReceives sends n messages to queue and fails each receive until the
// redrive policy (maxReceiveCount 1) moved all of them to the dead-letter queue.
func deadLetterThroughReceives(t *testing.T, client *sqs.Client, queue testenv.Queue, n int) {
	t.Helper()
	for i := range n {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queue.URL), MessageBody: aws.String(fmt.Sprintf(`{"id":"n%d"}`, i)),
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadLetterThroughReceivesAgain(t, client, queue, n)
}

// deadLetterThroughReceivesAgain fails every receive of queue until its DLQ holds n.
func deadLetterThroughReceivesAgain(t *testing.T, client *sqs.Client, queue testenv.Queue, n int) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "messages dead-lettered", func() bool {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for i, message := range output.Messages {
			if _, err := client.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{
				QueueUrl: aws.String(queue.URL),
				Entries:  []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: message.ReceiptHandle}},
			}); err != nil {
				t.Fatal(err)
			}
		}
		visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible == n
	})
}

// The CLI's FIFO redrive prints the reordering warning and keeps exit 0.
func TestCLIFIFOWarning(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, ContentBasedDeduplication: true})
	deadLetter(t, client, queue.URL, "k2", `{"id":"k2"}`, "HandlerBug")
	r := want(t, exitOK, "redrive", "move", "--from", queue.DeadLetterQueueURL, "--to", queue.URL)
	if !strings.Contains(r.stderr, `warning: FIFO order changed in group "g1"`) || !strings.Contains(r.stdout, "Moved 1 of 1") {
		t.Fatalf("FIFO move:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
}

func TestCLIIdempotency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	// The records are written as the idempotency package stores them (attribute names
	// id, status, expiration in epoch s, in_progress_expiry in epoch ms, lease, data).
	db := testenv.DynamoDB(t)
	now := time.Now()
	put := func(item map[string]dbtypes.AttributeValue) {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	number := func(n int64) dbtypes.AttributeValue {
		return &dbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	text := func(s string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: s} }
	put(map[string]dbtypes.AttributeValue{
		"id": text("idempotency#webhook#done"), "status": text("COMPLETED"), "expiration": number(now.Add(time.Hour).Unix()),
		"lease": text("lease-done"), "data": &dbtypes.AttributeValueMemberB{Value: []byte("200 OK")},
	})
	put(map[string]dbtypes.AttributeValue{
		"id": text("idempotency#webhook#stuck"), "status": text("IN_PROGRESS"), "expiration": number(now.Add(time.Hour).Unix()),
		"in_progress_expiry": number(now.Add(time.Minute).UnixMilli()), "lease": text("lease-stuck"),
	})

	got := decode[recordView](t, want(t, exitOK, "idempotency", "get", "done", "--table", table, "--prefix", "webhook", "-o", "json"))
	if got.Key != "idempotency#webhook#done" || got.Status != idempotency.StatusCompleted || got.Expired || string(got.Result) != "200 OK" {
		t.Fatalf("get = %+v", got)
	}
	r := want(t, exitError, "idempotency", "delete", "done", "--prefix", "webhook", "--table", table)
	if !strings.Contains(r.stderr, "refusing to delete the COMPLETED record") {
		t.Fatalf("delete COMPLETED without --force: %s", r.stderr)
	}
	want(t, exitOK, "idempotency", "get", "idempotency#webhook#done", "--stored", "--table", table) // still there, by its stored key
	want(t, exitOK, "idempotency", "delete", "done", "--prefix", "webhook", "--table", table, "--force")
	r = want(t, exitError, "idempotency", "get", "done", "--prefix", "webhook", "--table", table)
	if !strings.Contains(r.stderr, "no idempotency record") {
		t.Fatalf("get after delete: %s", r.stderr)
	}

	r = want(t, exitOK, "idempotency", "delete", "stuck", "--prefix", "webhook", "--table", table)
	if !strings.Contains(r.stderr, "warning: the in-progress lease") || !strings.Contains(r.stdout, `Deleted the IN_PROGRESS record "idempotency#webhook#stuck"`) {
		t.Fatalf("delete IN_PROGRESS:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
}
