package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/provision"
)

// An entry SQS refuses is listed by `outbox failed` with its reason.
func TestOutboxFailedListsRefusedEntries(t *testing.T) {
	t.Parallel()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the test sets or reads MaximumMessageSize
	ctx := context.Background()
	sqsClient, db := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	if _, err := sqsClient.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(queue.URL), Attributes: map[string]string{"MaximumMessageSize": "1024"},
	}); err != nil {
		t.Fatal(err)
	}
	box, err := outbox.NewDynamoDB(outbox.DynamoDBConfig{Table: testenv.UniqueName(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := provision.CreateNewTable(ctx, db, box.CreateTableInput()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(box.Table())}) })
	items, entries, err := box.TransactItems(nil, queue.URL,
		producer.Job{Type: "report", Body: strings.Repeat("x", 2048)}, producer.Job{Type: "report", Body: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		t.Fatal(err)
	}
	jobs, err := producer.New(sqsClient, producer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	relay, err := outbox.NewDynamoDBRelay(db, box, jobs, outbox.RelayConfig{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "one entry published and one failed", func() bool {
		s := relay.Stats()
		return s.Published == 1 && s.Failed == 1
	})
	shutdown, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := relay.Shutdown(shutdown); err != nil {
		t.Fatal(err)
	}

	out := cli(t, nil, "outbox", "failed", "--table", box.Table(), "-o", "json")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	var views []outboxEntryView
	if err := json.Unmarshal([]byte(out.stdout), &views); err != nil {
		t.Fatalf("%v: %s", err, out.stdout)
	}
	if len(views) != 1 || views[0].ID != entries[0].ID || !strings.Contains(views[0].Reason, "MaximumMessageSize of 1024 bytes") || views[0].BodyBytes != 2048 {
		t.Fatalf("failed entries = %+v, want only %s with its size reason", views, entries[0].ID)
	}
	backlog := cli(t, nil, "outbox", "backlog", "--table", box.Table())
	if backlog.code != 0 || strings.TrimSpace(backlog.stdout) != "unpublished=0 lag=0s failed=1 parked=0" {
		t.Fatalf("backlog: exit %d, %q %s", backlog.code, backlog.stdout, backlog.stderr)
	}
	if usage := cli(t, nil, "outbox", "failed"); usage.code != 2 {
		t.Fatalf("no source: exit %d, want 2 (usage)", usage.code)
	}
}

// A FIFO queue that does not exist yet (deployed after the writer): its group's first
// entry fails after its one attempt and parks the group; `outbox list --parked` shows it
// with the reason and the entry waiting behind it, `outbox backlog` counts both, and once
// the queue exists `outbox retry` sends the group in order. `outbox skip` of an entry
// that is not failed is refused.
func TestOutboxParkedGroupIsListedAndRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, db := testenv.SQS(t), testenv.DynamoDB(t)
	existing := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{FIFO: true, NoDeadLetterQueue: true})
	later := strings.TrimSuffix(existing.URL, ".fifo") + "-later.fifo"
	box, err := outbox.NewDynamoDB(outbox.DynamoDBConfig{Table: testenv.UniqueName(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := provision.CreateNewTable(ctx, db, box.CreateTableInput()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(box.Table())}) })
	items, entries, err := box.TransactItems(nil, later,
		producer.Job{Type: "report", Body: `{"n":1}`, GroupID: "G"}, producer.Job{Type: "report", Body: `{"n":2}`, GroupID: "G"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		t.Fatal(err)
	}
	jobs, err := producer.New(sqsClient, producer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	relay, err := outbox.NewDynamoDBRelay(db, box, jobs, outbox.RelayConfig{PollInterval: 50 * time.Millisecond, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shutdown, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(shutdown)
	})
	testenv.Eventually(t, 20*time.Second, "the group's first entry failed", func() bool { return relay.Stats().Failed == 1 })

	out := want(t, 0, "outbox", "list", "--parked", "--table", box.Table(), "-o", "json")
	var parked []outboxParkedView
	if err := json.Unmarshal([]byte(out.stdout), &parked); err != nil {
		t.Fatalf("%v: %s", err, out.stdout)
	}
	if len(parked) != 1 || parked[0].GroupID != "G" || parked[0].EntryID != entries[0].ID || parked[0].Waiting != 1 ||
		!strings.HasPrefix(parked[0].Reason, "outbox: entry not sent after its last attempt (attempt 1 of 1): ") {
		t.Fatalf("parked = %+v, want group G held by %s with 1 waiting", parked, entries[0].ID)
	}
	failed := want(t, 0, "outbox", "failed", "--table", box.Table(), "-o", "json")
	var views []outboxEntryView
	if err := json.Unmarshal([]byte(failed.stdout), &views); err != nil || len(views) != 1 || views[0].ID != entries[0].ID || views[0].Attempts != 1 {
		t.Fatalf("outbox failed: %v %s", err, failed.stdout)
	}
	backlog := want(t, 0, "outbox", "backlog", "--table", box.Table())
	if fields := strings.Fields(backlog.stdout); len(fields) != 4 || fields[0] != "unpublished=1" || fields[2] != "failed=1" || fields[3] != "parked=1" {
		t.Fatalf("backlog: %q", backlog.stdout)
	}
	if r := cli(t, nil, "outbox", "skip", "--table", box.Table(), entries[1].ID); r.code == 0 || !strings.Contains(r.stderr, "no failed entry has this id") {
		t.Fatalf("skip of a waiting entry: exit %d, %s", r.code, r.stderr)
	}

	created, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(path.Base(later)), Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = sqsClient.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: created.QueueUrl})
	})
	if aws.ToString(created.QueueUrl) != later {
		t.Fatalf("created %s, want %s", aws.ToString(created.QueueUrl), later)
	}
	if r := want(t, 0, "outbox", "retry", "--table", box.Table(), entries[0].ID); strings.TrimSpace(r.stdout) != "retried "+entries[0].ID {
		t.Fatalf("retry: %q", r.stdout)
	}
	messages := testenv.Receive(t, sqsClient, sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{outbox.AttributeOutboxID}}, 2, 30*time.Second)
	var order []string
	for _, m := range messages {
		order = append(order, aws.ToString(m.MessageAttributes[outbox.AttributeOutboxID].StringValue))
	}
	if strings.Join(order, ",") != entries[0].ID+","+entries[1].ID {
		t.Fatalf("received %v, want the group in order", order)
	}
	testenv.Eventually(t, 20*time.Second, "nothing left", func() bool {
		r := cli(t, nil, "outbox", "backlog", "--table", box.Table())
		return strings.HasPrefix(r.stdout, "unpublished=0 ") && strings.Contains(r.stdout, "failed=0 parked=0")
	})
}

// The PostgreSQL outbox through --postgres: an empty outbox's backlog.
func TestOutboxBacklogOnPostgres(t *testing.T) {
	t.Parallel()
	url, _ := outboxSchema(t)
	if r := want(t, 0, "outbox", "backlog", "--postgres", url); strings.TrimSpace(r.stdout) != "unpublished=0 lag=0s failed=0 parked=0" {
		t.Fatalf("backlog: %q", r.stdout)
	}
	if r := want(t, 0, "outbox", "list", "--parked", "--postgres", url, "-o", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("parked: %q", r.stdout)
	}
}

// `sqsworker ui --outbox-postgres URL` shows that outbox's view, naming the database
// without the URL's password; without an outbox flag the view is absent (404, no link).
func TestUIOutboxFlag(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	url, schema := outboxSchema(t)
	withPassword := strings.Replace(url, "sqsworker@", "sqsworker:hunter2-secret@", 1)
	token := "outbox-flag-test-0123456789"
	env := []string{uiTokenVariable + "=" + token}
	bearer := func(base, path string) (int, string) {
		t.Helper()
		request, _ := http.NewRequest(http.MethodGet, base+path, nil)
		request.Header.Set("Authorization", "Bearer "+token)
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		body, _ := io.ReadAll(response.Body)
		return response.StatusCode, string(body)
	}

	base := "http://" + startUI(t, env, queue.URL, "--outbox-postgres", withPassword).address(t).Host
	code, body := bearer(base, "/outbox")
	if code != http.StatusOK || !strings.Contains(body, `<td id="unpublished">0</td>`) || !strings.Contains(body, `<td id="failed-count">0</td>`) {
		t.Fatalf("GET /outbox = %d:\n%s", code, body)
	}
	if !strings.Contains(body, "/sqsworker (search_path "+schema+")") || strings.Contains(body, "hunter2") {
		t.Fatalf("the view must name the database and schema, without the password:\n%s", body)
	}
	if _, queues := bearer(base, "/"); !strings.Contains(queues, `href="/outbox"`) {
		t.Fatalf("the queues page has no outbox link:\n%s", queues)
	}

	plain := "http://" + startUI(t, env, queue.URL).address(t).Host
	if code, body := bearer(plain, "/outbox"); code != http.StatusNotFound || !strings.Contains(body, "the CLI: --outbox-table TABLE or --outbox-postgres URL") {
		t.Fatalf("GET /outbox without an outbox = %d:\n%s", code, body)
	}
	if _, queues := bearer(plain, "/"); strings.Contains(queues, `href="/outbox"`) {
		t.Fatalf("without an outbox the queues page links to it:\n%s", queues)
	}
}

// outboxSchema migrates an outbox into a schema of the test's own (dropped at the end)
// and returns the URL whose search_path names it, and the schema.
func outboxSchema(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	base := testenv.PostgresURL(t)
	schema := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t), "-", "_"))
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		_ = admin.Close(context.Background())
	})
	separator := "?"
	if strings.Contains(base, "?") {
		separator = "&"
	}
	url := base + separator + "search_path=" + schema
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := outbox.MigratePostgres(ctx, conn); err != nil {
		t.Fatal(err)
	}
	return url, schema
}
