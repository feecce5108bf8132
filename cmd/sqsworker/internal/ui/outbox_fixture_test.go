package ui_test

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/cmd/sqsworker/internal/outboxstore"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxpg"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/provision"
)

// failedOutbox is an outbox (DynamoDB on moto, or the local PostgreSQL) whose running
// relay gave up, after its one attempt, on the entries bound for queues that do not exist:
// group G of a FIFO queue deployed later (its first entry failed and parks the group, the
// second waits behind it) and one entry of a standard queue that never exists.
type failedOutbox struct {
	store  outboxstore.Store
	client *sqs.Client
	fifo   string         // the FIFO queue's URL, created by createFIFO
	group  []outbox.Entry // G's entries, in order: the failed head, the one waiting
	lone   outbox.Entry   // the standard queue's failed entry
}

// newFailedOutbox writes the entries in one transaction, starts a relay (MaxAttempts 1)
// stopped at the end of the test, and waits until it failed the two entries it tried.
func newFailedOutbox(t *testing.T, client *sqs.Client, store string) *failedOutbox {
	t.Helper()
	ctx := context.Background()
	existing := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, NoDeadLetterQueue: true})
	f := &failedOutbox{client: client, fifo: strings.TrimSuffix(existing.URL, ".fifo") + "-later.fifo"}
	gone := strings.TrimSuffix(existing.URL, ".fifo") + "-gone"
	group := []producer.Job{{Type: "invoice", Body: `{"n":1}`, GroupID: "G"}, {Type: "invoice", Body: `{"n":2}`, GroupID: "G"}}
	lone := producer.Job{Type: "report", Body: `{"n":3}`}
	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	config := outbox.RelayConfig{PollInterval: 50 * time.Millisecond, MaxAttempts: 1, ReportInterval: -1}
	var relay *outbox.Relay
	switch store {
	case "dynamodb":
		db := testenv.DynamoDB(t)
		box, err := outboxdynamo.New(outboxdynamo.Config{Table: testenv.UniqueName(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := provision.CreateNewTable(ctx, db, box.CreateTableInput()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(box.Table())})
		})
		items, entries, err := box.TransactItems(nil, f.fifo, group...)
		if err != nil {
			t.Fatal(err)
		}
		items, others, err := box.TransactItems(items, gone, lone)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
			t.Fatal(err)
		}
		f.group, f.lone = entries, others[0]
		if f.store, err = outboxstore.NewDynamoDB(db, box.Table()); err != nil {
			t.Fatal(err)
		}
		if relay, err = outboxdynamo.NewRelay(db, box, jobs, config); err != nil {
			t.Fatal(err)
		}
	case "postgres":
		url := postgresSchema(t)
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := outboxpg.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		box := outboxpg.New(outboxpg.Config{})
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if f.group, err = box.Enqueue(ctx, tx, f.fifo, group...); err != nil {
				return err
			}
			others, err := box.Enqueue(ctx, tx, gone, lone)
			if err == nil {
				f.lone = others[0]
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if f.store, err = outboxstore.OpenPostgres(ctx, url); err != nil {
			t.Fatal(err)
		}
		if relay, err = outboxpg.NewRelay(pool, box, jobs, outboxpg.RelayConfig{RelayConfig: config}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no outbox store %q", store)
	}
	t.Cleanup(f.store.Close)
	if err := relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := relay.Shutdown(shutdown); err != nil {
			t.Errorf("stopping the relay: %v", err)
		}
	})
	testenv.Eventually(t, testenv.WaitTimeout, "the relay failed G's head and the standard entry", func() bool { return relay.Stats().Failed == 2 })
	return f
}

// createFIFO creates the FIFO queue G's entries are bound for.
func (f *failedOutbox) createFIFO(t *testing.T) {
	t.Helper()
	created, err := f.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(path.Base(f.fifo)),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = f.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: created.QueueUrl})
	})
	if aws.ToString(created.QueueUrl) != f.fifo {
		t.Fatalf("created %s, want %s", aws.ToString(created.QueueUrl), f.fifo)
	}
}

// receivedInOrder waits until the relay published everything (the store's summary is
// all zero), then receives G's two messages from the FIFO queue and fails the test unless
// they are exactly G's entries, in order, each once. (Receiving earlier could take the
// head alone, and the group's second message would then wait out the head's visibility
// timeout.)
func (f *failedOutbox) receivedInOrder(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, testenv.WaitTimeout, "the relay published G", func() bool {
		summary, err := f.store.Summary(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return summary == outbox.Summary{}
	})
	messages := testenv.Receive(t, f.client, sqs.ReceiveMessageInput{QueueUrl: aws.String(f.fifo), VisibilityTimeout: 60,
		MessageAttributeNames: []string{outbox.AttributeOutboxID}}, 2, testenv.ReceiveTimeout)
	var order []string
	for _, m := range messages {
		order = append(order, aws.ToString(m.MessageAttributes[outbox.AttributeOutboxID].StringValue))
	}
	if want := f.group[0].ID + "," + f.group[1].ID; strings.Join(order, ",") != want {
		t.Fatalf("the FIFO queue received %v, want exactly G's entries in order (%s)", order, want)
	}
}

// postgresSchema creates a schema of the test's own, dropped at the end, and returns the
// local PostgreSQL's URL with that schema as its search_path.
func postgresSchema(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	base := testenv.PostgresURL(t)
	schema := pgx.Identifier{strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t), "-", "_"))}
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema.Sanitize()+" CASCADE")
		_ = admin.Close(context.Background())
	})
	separator := "?"
	if strings.Contains(base, "?") {
		separator = "&"
	}
	return base + separator + "search_path=" + schema[0]
}

// failedReason returns the failure reason the store holds for the failed entry id.
func (f *failedOutbox) failedReason(t *testing.T, id string) string {
	t.Helper()
	entries, err := f.store.Failed(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.ID == id {
			return e.FailureReason
		}
	}
	t.Fatalf("no failed entry %s", id)
	return ""
}
