package fleetlimit_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/poller"
)

// call is one request the downstream served, timed by the downstream itself.
type call struct {
	key, job   string
	start, end time.Time
}

// downstream is a test HTTP service that records, by its own clock, when each request
// for a key arrived and when it answered; each request takes work.
type downstream struct {
	server *httptest.Server
	mu     sync.Mutex
	calls  []call
}

func newDownstream(t *testing.T, work time.Duration) *downstream {
	d := &downstream{}
	d.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if work > 0 {
			timer := time.NewTimer(work) // the work itself, not a wait for a condition
			<-timer.C
		}
		d.mu.Lock()
		d.calls = append(d.calls, call{key: r.URL.Query().Get("key"), job: r.URL.Query().Get("job"), start: start, end: time.Now()})
		d.mu.Unlock()
	}))
	t.Cleanup(d.server.Close)
	return d
}

// call asks the downstream on behalf of key.
func (d *downstream) call(ctx context.Context, key string) error {
	return callDownstream(ctx, d.server.URL, key, "")
}

// callDownstream asks the downstream at baseURL on behalf of key, for job (recorded).
func callDownstream(ctx context.Context, baseURL, key, job string) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/?"+url.Values{"key": {key}, "job": {job}}.Encode(), nil)
	if err != nil {
		return err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return err
	}
	return response.Body.Close()
}

func (d *downstream) recorded() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// maxOverlap returns, per key, the most calls the downstream was serving at once (a call
// that ended at the instant another started does not overlap it).
func maxOverlap(calls []call) map[string]int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := map[string][]edge{}
	for _, c := range calls {
		edges[c.key] = append(edges[c.key], edge{c.start, 1}, edge{c.end, -1})
	}
	most := map[string]int{}
	for key, list := range edges {
		slices.SortFunc(list, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.delta - b.delta // ends first
		})
		running := 0
		for _, e := range list {
			running += e.delta
			most[key] = max(most[key], running)
		}
	}
	return most
}

// startWorker runs one poller on queueURL with handler, stopped when the test ends.
func startWorker(t testing.TB, client *sqs.Client, queueURL string, concurrency int, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, Concurrency: concurrency, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}
