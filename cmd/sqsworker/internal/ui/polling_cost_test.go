package ui_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/opspage"
)

// pollInterval is the page's interval in the measurement, the default one: long enough
// for the second poll to end (50 queues take 1 to 2 s on a loaded emulator) well before
// a third begins.
const pollInterval = opspage.DefaultInterval

// countingClient counts the SQS API calls that go through it, by action (the
// X-Amz-Target header of SQS's JSON protocol, "AmazonSQS.GetQueueAttributes").
type countingClient struct {
	next sqs.HTTPClient
	mu   sync.Mutex
	by   map[string]int
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	_, action, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	c.mu.Lock()
	c.by[action]++
	c.mu.Unlock()
	return c.next.Do(r)
}

// count returns the calls of action so far.
func (c *countingClient) count(action string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[action]
}

// take returns the counts so far and starts again from zero.
func (c *countingClient) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := c.by
	c.by = map[string]int{}
	return by
}

// TestPollingCost measures, on the emulator, the SQS calls of the page's polls with N
// queues, each with a dead-letter queue of its own (docs/benchmarks.md): the first poll
// makes 2N GetQueueAttributes, N ListMessageMoveTasks and N GetQueueUrl (each
// dead-letter queue's URL, resolved once), every later poll the same without
// GetQueueUrl; 200 page loads and live refreshes (the charts included) make none.
func TestPollingCost(t *testing.T) {
	t.Parallel()
	base := testenv.SQS(t)
	counter := &countingClient{by: map[string]int{}}
	client := sqs.New(base.Options(), func(o *sqs.Options) { counter.next, o.HTTPClient = o.HTTPClient, counter })
	for _, n := range []int{1, 10, 50} {
		var urls []string
		for range n {
			urls = append(urls, testenv.NewQueue(t, base, testenv.QueueOptions{}).URL)
		}
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		page, err := opspage.New(client, opspage.Config{Addr: listener.Addr().String(), Queues: urls, Interval: pollInterval, AccessToken: "0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		counter.take()
		began := time.Now()
		page.Start(context.Background()) // the first poll, then one every pollInterval
		took := time.Since(began)
		first := counter.take()
		// The second poll ends with the last dead-letter queue's ListMessageMoveTasks.
		testenv.Eventually(t, testenv.WaitTimeout, "the second poll", func() bool { return counter.count("ListMessageMoveTasks") == n })
		page.Close()
		second := counter.take()
		server := httptest.NewUnstartedServer(page)
		server.Listener.Close()
		server.Listener = listener
		server.Start()
		name := urls[0][strings.LastIndex(urls[0], "/")+1:]
		for range 50 {
			for _, path := range []string{"/", "/api/queues", "/queue?queue=" + name, "/queue/charts?queue=" + name} {
				r, _ := http.NewRequest(http.MethodGet, server.URL+path, nil)
				r.Header.Set("Authorization", "Bearer 0123456789abcdef")
				response, err := server.Client().Do(r)
				if err != nil {
					t.Fatal(err)
				}
				response.Body.Close()
				if response.StatusCode != http.StatusOK {
					t.Fatalf("GET %s = %d", path, response.StatusCode)
				}
			}
		}
		server.Close()
		pages := counter.take()
		want := map[string]int{"GetQueueAttributes": 2 * n, "ListMessageMoveTasks": n, "GetQueueUrl": n}
		if fmt.Sprint(first) != fmt.Sprint(want) {
			t.Fatalf("%d queues: the first poll made %v, want %v", n, first, want)
		}
		delete(want, "GetQueueUrl")
		if fmt.Sprint(second) != fmt.Sprint(want) || len(pages) != 0 {
			t.Fatalf("%d queues: the second poll made %v, want %v; 200 page loads made %v, want none", n, second, want, pages)
		}
		perPoll := second["GetQueueAttributes"] + second["ListMessageMoveTasks"]
		t.Logf("%d queues: first poll %v in %s; later polls %v (%d calls), %d a minute at the default 5 s interval, %d at 500 ms; 200 page loads: %d calls",
			n, first, took.Round(time.Millisecond), second, perPoll, perPoll*12, perPoll*120, len(pages))
	}
}
