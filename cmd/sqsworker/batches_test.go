package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// TestCLIBatchesShow: `batches show` shows a sealed batch with one of its two jobs ended
// (text and JSON), then the same batch succeeded with its callback sent; an unknown id
// is an error, a malformed one a usage error.
func TestCLIBatchesShow(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	client := testenv.SQS(t)
	table := testenv.NewTable(t, db)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	p, err := producer.New(client, producer.Config{Unique: producer.NewDynamoDBUniqueStore(db, table)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := batches.New(db, p, batches.Config{Table: table, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: queue.URL, Job: producer.Job{Type: "pages-done", Body: "done"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Add(ctx, queue.URL, producer.Job{Type: "page", Body: "1"}, producer.Job{Type: "page", Body: "2"}); err != nil {
		t.Fatal(err)
	}
	if err := batch.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}}, 2, testenv.ReceiveTimeout)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), b.Middleware(batches.MiddlewareConfig{}))
	end := func(i int) {
		t.Helper()
		m := sqsworker.Message{ID: aws.ToString(messages[i].MessageId), Body: aws.ToString(messages[i].Body), ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{}}
		for name, a := range messages[i].MessageAttributes {
			m.MessageAttributes[name] = sqsworker.MessageAttribute{DataType: aws.ToString(a.DataType), StringValue: aws.ToString(a.StringValue)}
		}
		if err := handler.Handle(ctx, &m); err != nil {
			t.Fatal(err)
		}
	}
	end(0)

	got := decode[batchView](t, want(t, exitOK, "batches", "show", batch.ID(), "--table", table, "-o", "json"))
	if got.ID != batch.ID() || got.State != "sealed" || got.Added != 2 || got.Pending != 1 || got.Succeeded != 1 || len(got.Shards) != 2 ||
		got.Success == nil || got.Success.JobType != "pages-done" || !got.Success.FiredAt.IsZero() || got.Complete != nil {
		t.Fatalf("batches show -o json = %+v", got)
	}
	r := want(t, exitOK, "batches", "show", batch.ID(), "--table", table)
	for _, line := range []string{"State:       sealed", "Jobs:        2 added, 1 pending, 1 succeeded, 0 dead-lettered", "Success:     pages-done to " + queue.URL, "not sent", "Complete:    -"} {
		if !strings.Contains(r.stdout, line) {
			t.Fatalf("batches show: no %q in\n%s", line, r.stdout)
		}
	}
	end(1)
	got = decode[batchView](t, want(t, exitOK, "batches", "show", batch.ID(), "--table", table, "-o", "json"))
	if got.State != "succeeded" || got.Succeeded != 2 || got.Pending != 0 || got.Success.FiredAt.IsZero() {
		t.Fatalf("after the last end: %+v", got)
	}
	if r := want(t, exitOK, "batches", "show", batch.ID(), "--table", table); !strings.Contains(r.stdout, "State:       succeeded") || !strings.Contains(r.stdout, ", sent ") {
		t.Fatalf("batches show after the last end:\n%s", r.stdout)
	}

	if r := want(t, exitError, "batches", "show", producer.NewJobID(), "--table", table); !strings.Contains(r.stderr, "no batch") {
		t.Fatalf("an unknown batch: %s", r.stderr)
	}
	if r := want(t, exitUsage, "batches", "show", "batch#meta#x", "--table", table); !strings.Contains(r.stderr, "is not a batch id") {
		t.Fatalf("a malformed id: %s", r.stderr)
	}
}
