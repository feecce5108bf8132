package ui_test

import (
	"context"
	"errors"
	"net/http"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/producer"
)

var letterLink = regexp.MustCompile(`/dlq/message\?queue=[^&"]+&id=([^"&]+)"`)

// TestJobView: a dead letter's job-id attribute links to the job's record, which the
// page shows with its state, attempts and last error.
func TestJobView(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	store, err := jobs.NewStore(db, jobs.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	id := producer.NewJobID()
	message := &sqsworker.Message{ID: "m-1", Body: `{"to":"a@example.com"}`, ReceiveCount: 1, QueueURL: queue.URL,
		MessageAttributes: map[string]sqsworker.MessageAttribute{sqsworker.AttributeJobID: {DataType: "String", StringValue: id}}}
	failing := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return sqsworker.Permanent("BadAddress", errors.New("no such mailbox"))
	})
	handlerErr := sqsworker.Chain(failing, store.Middleware(jobs.MiddlewareConfig{})).Handle(context.Background(), message)
	testenv.DeadLetter(t, client, queue.URL, message, sqsworker.Classify(handlerErr))

	server, base := serve(t, client, opspage.Config{Queues: []string{queue.URL}, Jobs: store, Table: table, Prefix: "/ops"}, true)
	c := &pageClient{t: t, base: base, token: server.AccessToken()}
	if _, body := c.do(http.MethodGet, "/", nil); !strings.Contains(body, `id="nav-jobs"`) {
		t.Fatalf("no link to the jobs page:\n%s", body)
	}
	c.do(http.MethodGet, "/dlq?queue="+path.Base(queue.URL), nil) // its form token
	_, body := c.post("/dlq/peek?queue="+path.Base(queue.URL), "queue", path.Base(queue.URL))
	link := letterLink.FindStringSubmatch(body)
	if link == nil {
		t.Fatalf("the peek lists no dead letter:\n%s", body)
	}
	_, body = c.do(http.MethodGet, "/dlq/message?queue="+path.Base(queue.URL)+"&id="+link[1], nil)
	if !strings.Contains(body, `id="job-link" href="/ops/jobs?id=`+id+`"`) {
		t.Fatalf("the dead letter's page does not link its job:\n%s", body)
	}
	status, body := c.do(http.MethodGet, "/jobs?id="+id, nil)
	for _, want := range []string{`<td id="job-state">dead-lettered</td>`, `<td id="job-attempts">1</td>`, "no such mailbox"} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("job page (%d) has no %q:\n%s", status, want, body)
		}
	}
	if _, body := c.do(http.MethodGet, "/jobs?id="+producer.NewJobID(), nil); !strings.Contains(body, "no record of job") {
		t.Fatalf("an unknown job:\n%s", body)
	}
}
