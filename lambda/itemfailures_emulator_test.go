package lambda_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// TestUnconfirmedRecordsComeBackThroughTheEventSourceMapping is CASES.md N01's second lane: the
// same six records on a queue with VT=65s and MRC=3, through the local event source
// mapping on LocalStack, the adapter served in-process with a 10 s function timeout.
// After the first invocation only r1 is deleted; r2..r6 are delivered again with
// ApproximateReceiveCount=2.
func TestUnconfirmedRecordsComeBackThroughTheEventSourceMapping(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 65 * time.Second, MaxReceiveCount: 3})
	for _, body := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var mu sync.Mutex
	receives := map[string][]int{} // body → receive counts handled
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		mu.Lock()
		receives[m.Body] = append(receives[m.Body], m.ReceiveCount)
		mu.Unlock()
		if m.ReceiveCount > 1 {
			return nil
		}
		return n01Record(ctx, m.Body, release)
	})
	b := newBatch(t, handler, lambda.WithSQSClient(client), lambda.WithConcurrency(2), lambda.WithDeadlineMargin(1500*time.Millisecond),
		lambda.WithBackoff(sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone}), lambda.WithLogger(slog.New(slog.DiscardHandler)))
	function := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event events.SQSEvent
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The function timeout, as Lambda sets it: 10 s from the invocation.
		ctx, cancel := context.WithTimeout(lambdacontext.NewContext(r.Context(), &lambdacontext.LambdaContext{AwsRequestID: "n01"}), 10*time.Second)
		defer cancel()
		response, err := b.Handle(ctx, event)
		if err != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
		}
		_ = json.NewEncoder(w).Encode(response)
	}))
	t.Cleanup(function.Close)

	var batches []localesm.Batch
	mapping, err := localesm.New(context.Background(), client, localesm.Config{
		QueueURL: queue.URL, FunctionURLs: []string{function.URL}, BatchSize: 10, BatchingWindow: 2 * time.Second,
		ReportBatchItemFailures: true, WaitTime: time.Second, MaximumConcurrency: 1,
		OnBatch: func(batch localesm.Batch) {
			mu.Lock()
			batches = append(batches, batch)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mapping.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })

	testenv.Eventually(t, 60*time.Second, "r2..r6 handled again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, body := range []string{"r2", "r3", "r4", "r5", "r6"} {
			if !slices.Contains(receives[body], 2) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	first := batches[0]
	bodies := map[string]string{}
	for _, record := range first.Event.Records {
		bodies[record.MessageId] = record.Body
	}
	if len(bodies) != 6 {
		t.Fatalf("the first invocation had %d records, want all six", len(bodies))
	}
	var deleted, failed []string
	for _, id := range first.Deleted {
		deleted = append(deleted, bodies[id])
	}
	for _, id := range first.Failed {
		failed = append(failed, bodies[id])
	}
	slices.Sort(failed)
	if !slices.Equal(deleted, []string{"r1"}) || !slices.Equal(failed, []string{"r2", "r3", "r4", "r5", "r6"}) || first.Err != nil {
		t.Errorf("first invocation: deleted %v, failed %v (err %v); want only r1 deleted", deleted, failed, first.Err)
	}
	if took := first.End.Sub(first.Start); took < 8500*time.Millisecond || took >= 10*time.Second {
		t.Errorf("the first invocation took %s, want between deadline − margin (8.5 s) and the 10 s timeout", took)
	}
	for _, body := range []string{"r2", "r3", "r4", "r5", "r6"} {
		if got := receives[body]; !slices.Equal(got, []int{1, 2}) && !(body == "r6" && slices.Equal(got, []int{2})) {
			t.Errorf("%s handled at receive counts %v, want 1 then 2 (r6: only 2, it was never started)", body, got)
		}
	}
	if got := receives["r1"]; !slices.Equal(got, []int{1}) {
		t.Errorf("r1 handled at receive counts %v, want once", got)
	}
}
