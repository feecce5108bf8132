package opspage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/redrive"
)

// Config.JobLink links each dead letter of the last look, in the dead-letter view and on
// its message page, to the address it returns (none for ""); an unsafe address is
// neutralised by html/template.
func TestJobLink(t *testing.T) {
	t.Parallel()
	links := func(queue string, letter redrive.DeadLetter) string {
		switch letter.ID {
		case "m-1":
			return "https://jobs.example/" + queue + "/" + letter.ID + "?a=1&b=2"
		case "m-2":
			return "javascript:alert(1)"
		}
		return ""
	}
	s := testServerWith(t, Config{JobLink: links, Prefix: "/ops"})
	s.refresher.snapshot = Snapshot{Queues: []QueueSnapshot{{Name: "orders", URL: "http://sqs.local/000000000000/orders",
		DLQ: &DLQSnapshot{Name: "orders-dlq", URL: "http://sqs.local/000000000000/orders-dlq"}}}}
	s.peeks["orders"] = &peek{At: time.Now(), Result: &redrive.PeekResult{Messages: []redrive.DeadLetter{{ID: "m-1"}, {ID: "m-2"}, {ID: "m-3"}}}}
	get := func(target string) string {
		r := request(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+s.AccessToken())
		w := serveOnce(s, r)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	dlq := get("/ops/dlq?queue=orders")
	if !strings.Contains(dlq, `<a class="job-link" href="https://jobs.example/orders/m-1?a=1&amp;b=2">job</a>`) {
		t.Errorf("no job link for m-1 in the dead-letter view:\n%s", dlq)
	}
	if strings.Contains(dlq, "javascript:") || !strings.Contains(dlq, `href="#ZgotmplZ"`) {
		t.Errorf("the unsafe link of m-2 was not neutralised")
	}
	if n := strings.Count(dlq, `class="job-link"`); n != 2 {
		t.Errorf("%d job links, want 2 (none for m-3)", n)
	}
	if page := get("/ops/dlq/message?queue=orders&id=m-1"); !strings.Contains(page, `id="job-link" href="https://jobs.example/orders/m-1?a=1&amp;b=2"`) {
		t.Errorf("no job link on m-1's page:\n%s", page)
	}
	if page := get("/ops/dlq/message?queue=orders&id=m-3"); strings.Contains(page, "job-link") {
		t.Errorf("a job link on m-3's page, for which JobLink returned none")
	}
}
