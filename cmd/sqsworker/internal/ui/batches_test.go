package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/producer"
)

// TestBatchView: the page shows a batch by its id: its state, counts, shards and
// callbacks; an unknown id and a malformed one say so.
func TestBatchView(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	p, err := producer.New(client, producer.Config{Unique: producer.NewDynamoDBUniqueStore(db, table)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := batches.New(db, p, batches.Config{Table: table, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{
		Success:  &batches.CallbackJob{QueueURL: queue.URL, Job: producer.Job{Type: "zip-pages", Body: "zip"}},
		Complete: &batches.CallbackJob{QueueURL: queue.URL, Job: producer.Job{Type: "pages-failed", Body: "failed"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Add(ctx, queue.URL, producer.Job{Type: "page", Body: "1"}, producer.Job{Type: "page", Body: "2"}); err != nil {
		t.Fatal(err)
	}

	server, base := serve(t, client, opspage.Config{Queues: []string{queue.URL}, Batches: b, Table: table, Prefix: "/ops"}, true)
	c := &pageClient{t: t, base: base, token: server.AccessToken()}
	if _, body := c.do(http.MethodGet, "/", nil); !strings.Contains(body, `id="nav-batches"`) {
		t.Fatalf("no link to the batches page:\n%s", body)
	}
	status, body := c.do(http.MethodGet, "/batches?id="+batch.ID(), nil)
	for _, want := range []string{`<td id="batch-state">open</td>`, `<td id="batch-counts">2 added, 2 pending, 0 succeeded, 0 dead-lettered</td>`,
		"<th>Shard 1</th>", `<td id="batch-success">zip-pages to ` + queue.URL, "not sent"} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("batch page (%d) has no %q:\n%s", status, want, body)
		}
	}
	if _, body := c.do(http.MethodGet, "/batches?id="+producer.NewJobID(), nil); !strings.Contains(body, "no batch") {
		t.Fatalf("an unknown batch:\n%s", body)
	}
	if _, body := c.do(http.MethodGet, "/batches?id=batch%23meta%23x", nil); !strings.Contains(body, "is not a batch id") {
		t.Fatalf("a malformed id:\n%s", body)
	}
}
