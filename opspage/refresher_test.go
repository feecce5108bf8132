package opspage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// countingAPI answers the refresher's calls from fixed queues and counts them.
type countingAPI struct {
	API
	mu         sync.Mutex
	attributes map[string]map[string]string // queue URL -> attributes
	calls      map[string]int               // "GetQueueAttributes <url>", "GetQueueUrl <name>", "ListMessageMoveTasks <arn>"
}

func (c *countingAPI) count(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[call]++
}

func (c *countingAPI) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.count("GetQueueAttributes " + aws.ToString(input.QueueUrl))
	c.mu.Lock()
	defer c.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: c.attributes[aws.ToString(input.QueueUrl)]}, nil
}

func (c *countingAPI) GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	c.count("GetQueueUrl " + aws.ToString(input.QueueName))
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("http://sqs.local/000000000000/" + aws.ToString(input.QueueName))}, nil
}

func (c *countingAPI) ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, _ ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	c.count("ListMessageMoveTasks " + aws.ToString(input.SourceArn))
	return &sqs.ListMessageMoveTasksOutput{Results: []types.ListMessageMoveTasksResultEntry{{
		Status: aws.String("RUNNING"), SourceArn: input.SourceArn, ApproximateNumberOfMessagesMoved: 2, ApproximateNumberOfMessagesToMove: aws.Int64(5),
	}}}, nil
}

const (
	ordersURL = "http://sqs.local/000000000000/orders"
	refundURL = "http://sqs.local/000000000000/refunds"
	plainURL  = "http://sqs.local/000000000000/plain"
	sharedDLQ = "http://sqs.local/000000000000/shared-dlq"
	dlqARN    = "arn:aws:sqs:us-east-1:000000000000:shared-dlq"
)

func newCountingAPI() *countingAPI {
	policy := `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"5"}`
	return &countingAPI{calls: map[string]int{}, attributes: map[string]map[string]string{
		ordersURL: {"ApproximateNumberOfMessages": "10", "ApproximateNumberOfMessagesNotVisible": "2", "ApproximateNumberOfMessagesDelayed": "1", "RedrivePolicy": policy},
		refundURL: {"ApproximateNumberOfMessages": "0", "RedrivePolicy": policy},
		plainURL:  {"ApproximateNumberOfMessages": "4"},
		sharedDLQ: {"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "1", "MessageRetentionPeriod": "1209600"},
	}}
}

// Each poll makes one GetQueueAttributes per queue and per dead-letter queue (a shared
// one once), one ListMessageMoveTasks per dead-letter queue and GetQueueUrl only the first
// time; reading the snapshot, however often, makes none.
func TestRefresherCallsPerPoll(t *testing.T) {
	t.Parallel()
	api := newCountingAPI()
	s, err := New(api, Config{Addr: "127.0.0.1:8089", Queues: []string{ordersURL, refundURL, plainURL}})
	if err != nil {
		t.Fatal(err)
	}
	const polls = 3
	for range polls {
		s.refresher.poll(context.Background())
	}
	handler := http.Handler(s)
	cookie := signIn(t, s)
	for range 50 { // fifty open pages refreshing
		if w := serveOnce(handler, authorized(request(http.MethodGet, "/api/queues", nil), cookie)); w.Code != http.StatusOK {
			t.Fatalf("/api/queues = %d", w.Code)
		}
		if w := serveOnce(handler, authorized(request(http.MethodGet, "/", nil), cookie)); w.Code != http.StatusOK {
			t.Fatalf("/ = %d", w.Code)
		}
	}
	want := map[string]int{
		"GetQueueAttributes " + ordersURL: polls, "GetQueueAttributes " + refundURL: polls, "GetQueueAttributes " + plainURL: polls,
		"GetQueueAttributes " + sharedDLQ: polls, "ListMessageMoveTasks " + dlqARN: polls, "GetQueueUrl shared-dlq": 1,
	}
	if fmt.Sprint(api.calls) != fmt.Sprint(want) {
		t.Fatalf("calls = %v, want %v", api.calls, want)
	}
	snapshot := s.refresher.snapshotNow()
	orders, _ := snapshot.Queue("orders")
	if orders.Visible != 10 || orders.InFlight != 2 || orders.Delayed != 1 || orders.MaxReceiveCount != 5 || orders.DLQ == nil ||
		orders.DLQ.Depth != 4 || orders.DLQ.Retention != 14*24*time.Hour || len(orders.DLQ.MoveTasks) != 1 {
		t.Fatalf("orders = %+v (DLQ %+v)", orders, orders.DLQ)
	}
	if c := cells(orders); c["move_task"] != "RUNNING: moved 2 of 5" || c["dlq_depth"] != "4" {
		t.Fatalf("cells = %v", c)
	}
	var answer live
	if err := json.NewDecoder(serveOnce(handler, authorized(request(http.MethodGet, "/api/queues", nil), cookie)).Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Queues) != 3 || answer.Queues[0].Cells["visible"] != "10" || answer.Queues[2].Cells["dlq_depth"] != "-" {
		t.Fatalf("/api/queues = %+v", answer)
	}
}

// start polls at once and every interval; stop ends the goroutine.
func TestRefresherStartStop(t *testing.T) {
	t.Parallel()
	api := newCountingAPI()
	r, err := newRefresher(api, []string{plainURL}, nil, MinInterval, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	polled := r.polledChan()
	r.start(context.Background())
	select {
	case <-polled:
	case <-time.After(time.Minute):
		t.Fatal("no first poll")
	}
	r.stop()
	api.mu.Lock()
	calls := api.calls["GetQueueAttributes "+plainURL]
	api.mu.Unlock()
	if calls < 1 {
		t.Fatalf("calls after Stop = %d", calls)
	}
	if _, err := newRefresher(api, []string{plainURL}, nil, MinInterval/2, time.Hour); err == nil {
		t.Fatal("an interval below MinInterval was accepted")
	}
}

// Throughput and failure rate from two reads of the counters: their increase over the
// time between the polls, failures over all finished calls; a fall is a restart.
func TestRatesFromCounters(t *testing.T) {
	t.Parallel()
	at := time.Now()
	first, later := Finished{Total: 234, Failed: 20}, Finished{Total: 314, Failed: 40}
	got := rates(sample{at: at, finished: first, hasMetrics: true}, sample{at: at.Add(2 * time.Second), finished: later, hasMetrics: true}, true)
	// Increase: 80 calls in 2 s, of which 20 failed.
	if !got.Known || got.PerSecond != 40 || got.Failure != 0.25 {
		t.Fatalf("rates = %+v, want 40/s and 25%%", got)
	}
	if c := cells(QueueSnapshot{Rates: got}); c["throughput"] != "40.00/s" || c["failure"] != "25.0%" {
		t.Fatalf("cells = %v", c)
	}
	restarted := rates(sample{at: at, finished: later, hasMetrics: true}, sample{at: at.Add(time.Second), finished: Finished{Total: 10, Failed: 1}, hasMetrics: true}, true)
	if !restarted.Known || restarted.PerSecond != 10 || restarted.Failure != 0.1 {
		t.Fatalf("rates after a restart = %+v, want 10/s and 10%%", restarted)
	}
}

// Without metrics: the net drain and the dead letters per minute.
func TestRatesFromSQS(t *testing.T) {
	t.Parallel()
	at := time.Now()
	got := rates(sample{at: at, depth: 100, dlqDepth: 1, hasDLQ: true}, sample{at: at.Add(10 * time.Second), depth: 80, dlqDepth: 3, hasDLQ: true}, false)
	if !got.Known || got.PerSecond != 2 || got.Failure != 12 {
		t.Fatalf("rates = %+v, want 2/s and 12 dead letters/min", got)
	}
	if first := rates(sample{}, sample{at: at}, false); first.Known {
		t.Fatalf("rates from one poll = %+v, want unknown", first)
	}
}
