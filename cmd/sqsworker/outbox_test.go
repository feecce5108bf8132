package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/provision"
	"github.com/sqsworker/sqsworker/internal/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
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
	if backlog.code != 0 || strings.TrimSpace(backlog.stdout) != "unpublished=0 lag=0s" {
		t.Fatalf("backlog: exit %d, %q %s", backlog.code, backlog.stdout, backlog.stderr)
	}
	if usage := cli(t, nil, "outbox", "failed"); usage.code != 2 {
		t.Fatalf("no source: exit %d, want 2 (usage)", usage.code)
	}
}
