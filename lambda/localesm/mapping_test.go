package localesm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/rie"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

func TestMain(m *testing.M) { os.Exit(rie.Main(m)) }

// stub is a function endpoint answering each event with respond(event, invocation number).
type stub struct {
	server      *httptest.Server
	invocations atomic.Int32
	running     atomic.Int32
	peak        atomic.Int32
}

func newStub(t *testing.T, hold time.Duration, respond func(event events.SQSEvent, invocation int32) string) *stub {
	s := &stub{}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.running.Add(1)
		defer s.running.Add(-1)
		for old := s.peak.Load(); now > old && !s.peak.CompareAndSwap(old, now); old = s.peak.Load() {
		}
		body, _ := io.ReadAll(r.Body)
		var event events.SQSEvent
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		invocation := s.invocations.Add(1)
		time.Sleep(hold)
		_, _ = io.WriteString(w, respond(event, invocation))
	}))
	t.Cleanup(s.server.Close)
	return s
}

// TestPartialResponse: the records not listed are deleted after one invocation; the
// listed one comes back with ApproximateReceiveCount 2.
func TestPartialResponse(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 2 * time.Second})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"A-1"}`, `{"key":"A-2"}`, `{"key":"A-3"}`)
	fn := newStub(t, 0, func(_ events.SQSEvent, invocation int32) string {
		if invocation == 1 {
			return `{"batchItemFailures":[{"itemIdentifier":"` + sent[1] + `"}]}`
		}
		return `{"batchItemFailures":[]}`
	})
	_, batches := esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{fn.server.URL}, BatchSize: 3,
		BatchingWindow: time.Second, ReportBatchItemFailures: true, WaitTime: time.Second})
	testenv.Eventually(t, 15*time.Second, "two invocations", func() bool { return len(batches()) >= 2 })
	first, second := batches()[0], batches()[1]
	if !slices.Equal(esmtest.SortedIDs(first), esmtest.Sorted(sent...)) || !slices.Equal(esmtest.Sorted(first.Deleted...), esmtest.Sorted(sent[0], sent[2])) || !slices.Equal(first.Failed, []string{sent[1]}) {
		t.Fatalf("first batch %v: deleted %v, failed %v (err %v)", esmtest.SortedIDs(first), first.Deleted, first.Failed, first.Err)
	}
	if !slices.Equal(esmtest.SortedIDs(second), []string{sent[1]}) || second.Event.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second batch %v, attributes %v", esmtest.SortedIDs(second), second.Event.Records[0].Attributes)
	}
	if got := first.Event.Records[0]; got.EventSource != "aws:sqs" || got.EventSourceARN != queue.ARN || got.AWSRegion == "" {
		t.Errorf("record envelope: eventSource %q, eventSourceARN %q, awsRegion %q", got.EventSource, got.EventSourceARN, got.AWSRegion)
	}
}

// TestWholeBatchFailure: a function error deletes nothing; all records come back.
func TestWholeBatchFailure(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 2 * time.Second})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"A-1"}`, `{"key":"A-2"}`)
	fn := newStub(t, 0, func(_ events.SQSEvent, invocation int32) string {
		if invocation == 1 {
			return `{"errorMessage":"downstream 503","errorType":"BatchError"}`
		}
		return `{}`
	})
	_, batches := esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{fn.server.URL}, BatchSize: 2,
		BatchingWindow: time.Second, ReportBatchItemFailures: true, WaitTime: time.Second})
	testenv.Eventually(t, 15*time.Second, "both records deleted", func() bool {
		deleted := 0
		for _, batch := range batches() {
			deleted += len(batch.Deleted)
		}
		return deleted == 2
	})
	first := batches()[0]
	if first.Err == nil || len(first.Deleted) != 0 || !slices.Equal(esmtest.Sorted(first.Failed...), esmtest.Sorted(sent...)) {
		t.Fatalf("first batch: err %v, deleted %v, failed %v", first.Err, first.Deleted, first.Failed)
	}
	for _, batch := range batches()[1:] {
		for _, record := range batch.Event.Records {
			if record.Attributes["ApproximateReceiveCount"] != "2" {
				t.Errorf("redelivered %s with receive count %s, want 2", record.MessageId, record.Attributes["ApproximateReceiveCount"])
			}
		}
	}
}

// TestMaximumConcurrency: with four environments but a maximum concurrency of 2, never
// more than two invocations run at once, and no batch is received without a free slot.
func TestMaximumConcurrency(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	var bodies []string
	for range 20 {
		bodies = append(bodies, `{"key":"x"}`)
	}
	esmtest.Send(t, client, queue.URL, bodies...)
	fn := newStub(t, 200*time.Millisecond, func(events.SQSEvent, int32) string { return `{"batchItemFailures":[]}` })
	url := fn.server.URL
	_, batches := esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{url, url + "/", url + "/a", url + "/b"},
		BatchSize: 2, MaximumConcurrency: 2, ReportBatchItemFailures: true, WaitTime: time.Second})
	testenv.Eventually(t, 20*time.Second, "20 records deleted", func() bool {
		deleted := 0
		for _, batch := range batches() {
			deleted += len(batch.Deleted)
		}
		return deleted == 20
	})
	if peak := fn.peak.Load(); peak != 2 {
		t.Errorf("peak concurrent invocations %d, want 2", peak)
	}
}

// TestBatchingWindow: records arriving within the window go into one invocation.
func TestBatchingWindow(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	fn := newStub(t, 0, func(events.SQSEvent, int32) string { return `{}` })
	_, batches := esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{fn.server.URL}, BatchSize: 10,
		BatchingWindow: 2 * time.Second, ReportBatchItemFailures: true, WaitTime: time.Second})
	esmtest.Send(t, client, queue.URL, `{"key":"w-1"}`)
	time.Sleep(500 * time.Millisecond) // the next records arrive while the window is open
	esmtest.Send(t, client, queue.URL, `{"key":"w-2"}`, `{"key":"w-3"}`)
	testenv.Eventually(t, 15*time.Second, "one invocation", func() bool { return len(batches()) >= 1 })
	if got := len(batches()[0].Event.Records); got != 3 {
		t.Errorf("first batch has %d records, want 3", got)
	}
}
