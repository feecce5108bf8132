package opspage

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// link matches every address a page refers to: links, forms, assets and the charts'
// fragment.
var link = regexp.MustCompile(`(?:href|src|action|data-charts)="([^"#][^"]*)"`)

// Mounted under /ops in a service's mux, with the prefix kept on the path or removed by
// http.StripPrefix, every address on every page starts with /ops/, and each one a GET
// may follow answers 200 through the service's mux; the service's own routes are left
// alone.
func TestMountedUnderAPrefix(t *testing.T) {
	t.Parallel()
	for _, strip := range []bool{false, true} {
		s, err := New(newCountingAPI(), Config{Addr: "127.0.0.1:8089", Prefix: "/ops", Queues: []string{ordersURL, plainURL}, AccessToken: "0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		s.refresher.poll(context.Background())
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "the service's own", http.StatusTeapot) })
		if strip {
			mux.Handle("/ops/", http.StripPrefix("/ops", s))
		} else {
			mux.Handle("/ops/", s)
		}
		get := func(target string) (int, string) {
			r := request(http.MethodGet, target, nil)
			r.Header.Set("Authorization", "Bearer 0123456789abcdef")
			w := serveOnce(mux, r)
			return w.Code, w.Body.String()
		}
		seen := map[string]bool{}
		for _, page := range []string{"/ops/", "/ops/queue?queue=orders", "/ops/dlq?queue=orders", "/ops/idempotency", "/ops/outbox", "/ops/queue?queue=nope"} {
			_, body := get(page)
			for _, m := range link.FindAllStringSubmatch(body, -1) {
				target := strings.ReplaceAll(m[1], "&amp;", "&")
				if !strings.HasPrefix(target, "/ops/") {
					t.Errorf("strip=%v: %s refers to %q, outside the prefix", strip, page, target)
				}
				seen[target] = true
			}
		}
		for _, want := range []string{"/ops/", "/ops/static/style.css", "/ops/static/refresh.js", "/ops/queue?queue=orders", "/ops/dlq?queue=orders",
			"/ops/queue/charts?queue=orders", "/ops/dlq/peek", "/ops/redrive/dry-run", "/ops/movetask/start"} {
			if !seen[want] {
				t.Errorf("strip=%v: no page refers to %s (saw %v)", strip, want, seen)
			}
		}
		for target := range seen {
			if strings.HasSuffix(target, "/peek") || strings.Contains(target, "/redrive/") || strings.Contains(target, "/movetask/") {
				continue // POST actions: TestPrefixKeepsTheGuard
			}
			if code, body := get(target); code != http.StatusOK {
				t.Errorf("strip=%v: GET %s = %d %s", strip, target, code, body)
			}
		}
		if code, _ := get("/elsewhere"); code != http.StatusTeapot {
			t.Errorf("strip=%v: the service's own route answered %d", strip, code)
		}
	}
}
