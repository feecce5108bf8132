package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/opspage"
)

// exposition is what the Prometheus handler of otelsqsworker/otelprom (otelprom.New)
// serves for one queue, in the layout captured from the real handler (names, labels,
// order), with the counts as format verbs.
const exposition = `# HELP sqsworker_messages_finished_total Handler calls that returned, by outcome and reason.
# TYPE sqsworker_messages_finished_total counter
sqsworker_messages_finished_total{messaging_destination_name="orders",otel_scope_name="github.com/sqsworker/sqsworker/otelsqsworker",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="",sqsworker_outcome="delete"} %d
sqsworker_messages_finished_total{messaging_destination_name="orders",otel_scope_name="github.com/sqsworker/sqsworker/otelsqsworker",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="",sqsworker_outcome="dead-letter",sqsworker_reason="HTTP410"} %d
sqsworker_messages_finished_total{messaging_destination_name="orders",otel_scope_name="github.com/sqsworker/sqsworker/otelsqsworker",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="",sqsworker_outcome="retry",sqsworker_reason="HandlerError"} %d
sqsworker_messages_finished_total{messaging_destination_name="orders",otel_scope_name="github.com/sqsworker/sqsworker/otelsqsworker",otel_scope_schema_url="",otel_scope_version="",sqsworker_job_type="",sqsworker_outcome="defer",sqsworker_reason="IdempotencyInProgress"} 7
# HELP target_info Target metadata
# TYPE target_info gauge
target_info{service_name="worker"} 1
`

// Two scrapes of two workers: the counter summed by queue over the workers, failures
// (dead-letter, retry) apart; a deferral counts in the total only.
func TestScraperSumsWorkers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	scrape := 0
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := scrape
		scrape++
		mu.Unlock()
		// Two workers share this server: scrapes 0,1 are the first poll, 2,3 the second.
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if n < 2 {
			fmt.Fprintf(w, exposition, 100, 5, 5)
		} else {
			fmt.Fprintf(w, exposition, 130, 8, 12)
		}
	}))
	defer worker.Close()
	scraper := NewScraper([]string{worker.URL, worker.URL}, 5*time.Second)
	counts, err := scraper.Finished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := counts["orders"]; got != (opspage.Finished{Total: 234, Failed: 20}) {
		t.Fatalf("first scrape = %+v, want 2 × (100+5+5+7) total, 2 × 10 failed", got)
	}
	later, err := scraper.Finished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := later["orders"]; got != (opspage.Finished{Total: 314, Failed: 40}) {
		t.Fatalf("second scrape = %+v, want 2 × (130+8+12+7) total, 2 × 20 failed", got)
	}
	if _, err := NewScraper([]string{worker.URL + "/missing\x7f"}, time.Second).Finished(context.Background()); err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Fatalf("bad URL: %v", err)
	}
}
