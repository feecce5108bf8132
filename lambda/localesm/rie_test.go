package localesm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// TestMalformedResponseThroughRIE is C02's LocalStack lane: a function in the Runtime
// Interface Emulator returns {"batchItemFailures":[{"itemIdentifier":""}]} for a batch of
// two. The mapping must treat that as a failure of the whole batch, so both messages are
// delivered again with ApproximateReceiveCount 2, not deleted.
func TestMalformedResponseThroughRIE(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 2 * time.Second, MaxReceiveCount: 3})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"C02-1"}`, `{"key":"C02-2"}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Env:      []string{"LAMBDATEST_MODE=stub", `LAMBDATEST_STUB_RESPONSE={"batchItemFailures":[{"itemIdentifier":""}]}`},
		Mapping:  localesm.Config{BatchSize: 2, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: true},
	})
	testenv.Eventually(t, 20*time.Second, "a second delivery of both messages", func() bool {
		seen := 0
		for _, batch := range h.Batches() {
			for _, record := range batch.Event.Records {
				if record.Attributes["ApproximateReceiveCount"] == "2" {
					seen++
				}
			}
		}
		return seen == 2
	})
	for _, batch := range h.Batches() {
		if len(batch.Deleted) != 0 {
			t.Errorf("batch %v: deleted %v after a malformed response (the lane is unfaithful)", esmtest.SortedIDs(batch), batch.Deleted)
		}
	}
	first := h.Batches()[0]
	if !slices.Equal(esmtest.SortedIDs(first), esmtest.Sorted(sent...)) || first.Err == nil {
		t.Errorf("first batch %v, err %v; want both messages and a malformed-response error", esmtest.SortedIDs(first), first.Err)
	}
}

// TestMappingWithoutReportBatchItemFailures is C01 (b) as AWS behaves: the mapping lacks
// ReportBatchItemFailures, so the function's partial response is ignored and the whole
// batch is deleted after one invocation, the failed record included. Nothing reaches the
// dead-letter queue. (lambda's end-to-end tests show the adapter option that avoids this.)
func TestMappingWithoutReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 3})
	esmtest.Send(t, client, queue.URL, `{"key":"A-1"}`, `{"key":"A-2","poison":true}`, `{"key":"A-3"}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Env:      []string{"LAMBDATEST_BACKOFF_BASE=1s"},
		Mapping:  localesm.Config{BatchSize: 3, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: false},
	})
	testenv.Eventually(t, 20*time.Second, "all three records deleted", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return len(h.Batches()) > 0 && visible+inFlight == 0
	})
	time.Sleep(1500 * time.Millisecond) // past A-2's backoff: it would be back by now
	if n := len(h.Calls(t, "A-2")); n != 1 {
		t.Errorf("A-2 handled %d times, want 1 (deleted with its batch)", n)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible+inFlight != 0 {
		t.Errorf("dead-letter queue holds %d messages, want 0", visible+inFlight)
	}
}
