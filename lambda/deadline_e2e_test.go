package lambda_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// TestE2ESettlingEndsBeforeTheDeadline: the function (3 s timeout, the default 2 s
// deadline margin), warm, fails its one record, and SQS is slow: the fault proxy holds the
// function's ChangeMessageVisibilityBatch for 30 s. The settle calls are bounded to end
// before the invocation's deadline, with room for the response, so the partial batch
// response leaves in time: the mapping gets {"batchItemFailures":[the record]} within
// the 3 s, not Lambda's timeout (which would retry the whole batch). Before, the call ran
// until the invocation's deadline itself and the RIE answered "Task timed out".
func TestE2ESettlingEndsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ChangeMessageVisibilityBatch"}, Fraction: 1, Times: 1, Delay: 30 * time.Second})
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 5})
	// A first job warms the function up: on a loaded machine its cold start alone can
	// outlast the deadline margin, and then the record never starts.
	esmtest.Send(t, client, queue.URL, `{"key":"W-1"}`)
	const timeout = 3 * time.Second
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Timeout:  timeout,
		Env:      []string{"AWS_ENDPOINT_URL_SQS=" + proxy.URL}, // the function's SQS calls only; the mapping's go direct
		Mapping:  localesm.Config{BatchSize: 1, ReportBatchItemFailures: true},
	})
	testenv.Eventually(t, 60*time.Second, "the warm-up invocation", func() bool { return len(h.Batches()) > 0 })
	if warmUp := h.Batches()[0]; warmUp.Err != nil || len(warmUp.Deleted) != 1 {
		t.Fatalf("warm-up invocation: error %v, deleted %v; want W-1 handled", warmUp.Err, warmUp.Deleted)
	}
	sent := esmtest.Send(t, client, queue.URL, `{"key":"D-1","poison":true}`)
	testenv.Eventually(t, 60*time.Second, "the invocation of D-1", func() bool { return len(h.Batches()) > 1 })
	first := h.Batches()[1]
	if first.Err != nil || !slices.Equal(first.Failed, sent) {
		t.Errorf("first invocation: error %v, failed %v, response %s; want the partial batch response failing %v", first.Err, first.Failed, first.Response, sent)
	}
	if took := first.End.Sub(first.Start); took >= timeout {
		t.Errorf("the response took %s, want less than the %s function timeout", took, timeout)
	}
	var held []faultproxy.Call
	for _, call := range proxy.Calls() {
		if call.Operation == "ChangeMessageVisibilityBatch" {
			held = append(held, call)
		}
	}
	if len(held) != 1 || held[0].Fault != "abandoned" {
		t.Errorf("ChangeMessageVisibilityBatch calls %+v; want one, abandoned by the function", held)
	}
}
