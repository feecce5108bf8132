package opspage

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/jobs"
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

// fakeJobs is a JobRecords holding fixed records.
type fakeJobs map[string]jobs.Record

func (f fakeJobs) Get(_ context.Context, id string) (jobs.Record, error) {
	r, ok := f[id]
	if !ok {
		return jobs.Record{}, jobs.ErrNotFound
	}
	return r, nil
}

// A job whose result is kept in S3 shows its reference, not a document; a small result
// shows as the document.
func TestJobViewResultRef(t *testing.T) {
	t.Parallel()
	ref := &jobs.ResultRef{Bucket: "acme-jobs", Key: "job-results/j-1/" + strings.Repeat("a", 64), Size: 614400, SHA256: strings.Repeat("a", 64)}
	s := testServerWith(t, Config{Jobs: fakeJobs{
		"j-1": {ID: "j-1", State: jobs.StateSucceeded, ResultRef: ref},
		"j-2": {ID: "j-2", State: jobs.StateSucceeded, Result: []byte(`{"ok":true}`)},
	}})
	get := func(target string) string {
		r := request(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+s.AccessToken())
		w := serveOnce(s, r)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	want := `<td id="job-result">in S3: s3://acme-jobs/job-results/j-1/` + strings.Repeat("a", 64) + ` (614400 bytes; <code>sqsworker jobs get j-1 --result</code> prints it)</td>`
	if page := get("/jobs?id=j-1"); !strings.Contains(page, want) {
		t.Errorf("no reference in the job view:\n%s", page)
	}
	if page := get("/jobs?id=j-2"); !strings.Contains(page, `<td id="job-result">{&#34;ok&#34;:true}</td>`) {
		t.Errorf("no document in the job view:\n%s", page)
	}
}
