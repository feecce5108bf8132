package lambda_test

// End-to-end tests: the adapter runs in examples/lambdatest, a real bootstrap in the
// Runtime Interface Emulator, invoked by the local event source mapping (lambda/localesm)
// against the emulated SQS (localstack/up).

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/rie"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

func TestMain(m *testing.M) { os.Exit(rie.Main(m)) }

// drained waits until the queue holds no message, visible or in flight.
func drained(t *testing.T, client *sqs.Client, url string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, "queue "+url+" empty", func() bool {
		visible, inFlight := testenv.Counts(t, client, url)
		return visible+inFlight == 0
	})
}

// deadLetters receives what the dead-letter queue holds (making it invisible for a minute),
// through testenv.Receive: a receive whose answer was lost does not lose its messages to
// the count, and an extra message fails the test.
func deadLetters(t *testing.T, client *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), VisibilityTimeout: 60,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}, want, 30*time.Second)
	if len(messages) != want {
		t.Fatalf("dead-letter queue holds %d messages, want %d", len(messages), want)
	}
	return messages
}

// failureAttributes returns the message attributes of a dead-letter copy as strings.
func failureAttributes(message types.Message) map[string]string {
	attributes := map[string]string{}
	for name, value := range message.MessageAttributes {
		attributes[name] = aws.ToString(value.StringValue)
	}
	return attributes
}

// batchReceiveCount is the receive count of the batch's records (they share one here).
func batchReceiveCount(batch localesm.Batch) string {
	if len(batch.Event.Records) == 0 {
		return ""
	}
	return batch.Event.Records[0].Attributes["ApproximateReceiveCount"]
}

func receiveCounts(entries []esmtest.Entry) []int {
	var counts []int
	for _, entry := range entries {
		counts = append(counts, entry.ReceiveCount)
	}
	return counts
}

// TestE2EPoisonMessage is C01 (a): batch size 3, m2 poison, maxReceiveCount 3. m1 and m3
// are deleted after the first invocation; m2 reaches the handler exactly 3 times (with
// the function's backoff between attempts) and is then in the dead-letter queue, sent
// by the function after its last attempt with reason RetriesExhausted, its last error
// and its original message id (before, SQS's redrive moved it without a reason).
func TestE2EPoisonMessage(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 3})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"A-1"}`, `{"key":"A-2","poison":true}`, `{"key":"A-3"}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Env:      []string{"LAMBDATEST_BACKOFF_BASE=1s", "LAMBDATEST_BACKOFF_CAP=1s"},
		Mapping:  localesm.Config{BatchSize: 3, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: true},
	})
	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 1)
	want := map[string]string{
		sqsworker.AttributeFailureReason:       sqsworker.ReasonRetriesExhausted,
		sqsworker.AttributeFailureMessageID:    sent[1],
		sqsworker.AttributeFailureError:        "poison job A-2",
		sqsworker.AttributeFailureSourceQueue:  queue.ARN,
		sqsworker.AttributeFailureReceiveCount: "3",
	}
	if got := failureAttributes(dead[0]); !maps.Equal(got, want) {
		t.Errorf("dead-letter copy attributes %v, want %v", got, want)
	}
	first := h.Batches()[0]
	if !slices.Equal(esmtest.Sorted(first.Deleted...), esmtest.Sorted(sent[0], sent[2])) || !slices.Equal(first.Failed, []string{sent[1]}) {
		t.Errorf("first invocation deleted %v and left %v; want m1, m3 deleted and m2 left", first.Deleted, first.Failed)
	}
	if got := receiveCounts(h.Calls(t, "A-2")); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("A-2 handled at receive counts %v, want [1 2 3]", got)
	}
	for key, want := range map[string]int{"A-1": 1, "A-2": 0, "A-3": 1} {
		if got := h.Effects(t, key); got != want {
			t.Errorf("effects[%s] = %d, want %d", key, got, want)
		}
	}
	drained(t, client, queue.URL, 10*time.Second)
}

// TestE2EWithoutReportBatchItemFailures is C01 (b) with the adapter told that the mapping
// lacks ReportBatchItemFailures: it deletes m1 and m3 itself and fails the invocation, so
// m2 is not deleted by the mapping until its third and last attempt fails: the function
// then sends it to the dead-letter queue (RetriesExhausted) and the invocation
// succeeds, so the mapping deletes it. m1 and m3 are handled once.
func TestE2EWithoutReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 3})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"A-1"}`, `{"key":"A-2","poison":true}`, `{"key":"A-3"}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Env:      []string{"LAMBDATEST_BACKOFF_BASE=1s", "LAMBDATEST_BACKOFF_CAP=1s", "LAMBDATEST_REPORT_BATCH_ITEM_FAILURES=false"},
		Mapping:  localesm.Config{BatchSize: 3, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: false},
	})
	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 1)
	if got := failureAttributes(dead[0]); got[sqsworker.AttributeFailureMessageID] != sent[1] || got[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted {
		t.Errorf("dead-letter copy attributes %v, want m2 %s as RetriesExhausted", got, sent[1])
	}
	if got := receiveCounts(h.Calls(t, "A-2")); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("A-2 handled at receive counts %v, want [1 2 3]", got)
	}
	for _, key := range []string{"A-1", "A-3"} {
		if calls, effects := len(h.Calls(t, key)), h.Effects(t, key); calls != 1 || effects != 1 {
			t.Errorf("%s: %d calls, %d effects; want 1 and 1", key, calls, effects)
		}
	}
	drained(t, client, queue.URL, 10*time.Second)
	testenv.Eventually(t, 10*time.Second, "the last invocation recorded", func() bool { return len(h.Batches()) == 3 })
	for _, batch := range h.Batches() {
		last := batchReceiveCount(batch) == "3"
		if last != (batch.Err == nil) || last != (len(batch.Deleted) == len(batch.Event.Records)) || !last && len(batch.Deleted) != 0 {
			t.Errorf("invocation %v at receive count %s: err %v, mapping deleted %v; want an invocation error and no deletes, but for the last attempt success and its delete",
				esmtest.SortedIDs(batch), batchReceiveCount(batch), batch.Err, batch.Deleted)
		}
	}
}

// TestE2EEntireBatchFails is C03 on the emulator: every record fails with a transient
// error. In both modes each record is handled exactly 3 times; after the first two
// attempts nothing is deleted (with the option, the invocation fails as a whole); after
// the third and last the function sends all three to the dead-letter queue
// (RetriesExhausted), the invocation succeeds and the mapping deletes them.
func TestE2EEntireBatchFails(t *testing.T) {
	t.Parallel()
	for _, asError := range []bool{false, true} {
		t.Run(fmt.Sprintf("error=%t", asError), func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 5 * time.Second, MaxReceiveCount: 3})
			esmtest.Send(t, client, queue.URL, `{"key":"m1","poison":true}`, `{"key":"m2","poison":true}`, `{"key":"m3","poison":true}`)
			env := []string{"LAMBDATEST_BACKOFF_BASE=1s", "LAMBDATEST_BACKOFF_CAP=1s"}
			if asError {
				env = append(env, "LAMBDATEST_ENTIRE_BATCH_FAILURE_ERROR=true")
			}
			h := esmtest.Start(t, client, esmtest.Options{
				QueueURL: queue.URL,
				Env:      env,
				Mapping:  localesm.Config{BatchSize: 3, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: true},
			})
			for _, dead := range deadLetters(t, client, queue.DeadLetterQueueURL, 3) {
				if reason := failureAttributes(dead)[sqsworker.AttributeFailureReason]; reason != sqsworker.ReasonRetriesExhausted {
					t.Errorf("dead-letter copy with reason %q, want RetriesExhausted", reason)
				}
			}
			for _, key := range []string{"m1", "m2", "m3"} {
				if got := receiveCounts(h.Calls(t, key)); !slices.Equal(got, []int{1, 2, 3}) {
					t.Errorf("%s handled at receive counts %v, want [1 2 3]", key, got)
				}
			}
			drained(t, client, queue.URL, 10*time.Second)
			testenv.Eventually(t, 10*time.Second, "the last invocations recorded", func() bool {
				deleted := 0
				for _, batch := range h.Batches() {
					deleted += len(batch.Deleted)
				}
				return deleted == 3
			})
			for _, batch := range h.Batches() {
				if last := batchReceiveCount(batch) == "3"; last {
					if batch.Err != nil || len(batch.Deleted) != len(batch.Event.Records) {
						t.Errorf("last invocation %v: error %v, deleted %v; want success and every record deleted", esmtest.SortedIDs(batch), batch.Err, batch.Deleted)
					}
					continue
				}
				if len(batch.Deleted) != 0 {
					t.Errorf("invocation %v deleted %v", esmtest.SortedIDs(batch), batch.Deleted)
				}
				if gotError := batch.Err != nil; gotError != asError {
					t.Errorf("invocation %v: whole-batch error %v, want an error: %t (response %s)", esmtest.SortedIDs(batch), batch.Err, asError, batch.Response)
				}
			}
		})
	}
}

// TestE2EPermanentError: a permanent error reaches the dead-letter queue after one
// invocation, sent by the function with the failure attributes, and is deleted from the
// source queue.
func TestE2EPermanentError(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	sent := esmtest.Send(t, client, queue.URL, `{"key":"P-1","permanent":true}`)
	h := esmtest.Start(t, client, esmtest.Options{QueueURL: queue.URL, Mapping: localesm.Config{ReportBatchItemFailures: true}})
	dead := deadLetters(t, client, queue.DeadLetterQueueURL, 1)
	attributes := map[string]string{}
	for name, value := range dead[0].MessageAttributes {
		attributes[name] = aws.ToString(value.StringValue)
	}
	want := map[string]string{
		sqsworker.AttributeFailureReason:       "PoisonPill",
		sqsworker.AttributeFailureMessageID:    sent[0],
		sqsworker.AttributeFailureError:        "permanent failure (PoisonPill): job P-1 can never succeed",
		sqsworker.AttributeFailureSourceQueue:  queue.ARN,
		sqsworker.AttributeFailureReceiveCount: "1",
	}
	for name, value := range want {
		if attributes[name] != value {
			t.Errorf("dead-letter attribute %s = %q, want %q", name, attributes[name], value)
		}
	}
	if got := aws.ToString(dead[0].Body); got != `{"key":"P-1","permanent":true}` {
		t.Errorf("dead-letter body %s", got)
	}
	drained(t, client, queue.URL, 10*time.Second)
	// The mapping records a batch after its deletes, so the queue can be empty first.
	testenv.Eventually(t, 10*time.Second, "the invocation recorded", func() bool { return len(h.Batches()) > 0 })
	if calls := len(h.Calls(t, "P-1")); calls != 1 || len(h.Batches()) != 1 {
		t.Errorf("%d calls in %d invocations, want 1 and 1", calls, len(h.Batches()))
	}
}

// TestE2EBackoff: a failing message is handled again after the backoff policy's delays
// (1 s, then 2 s, without jitter), not after the queue's 30 s visibility timeout.
func TestE2EBackoff(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 3})
	esmtest.Send(t, client, queue.URL, `{"key":"B-1","poison":true}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Env:      []string{"LAMBDATEST_BACKOFF_BASE=1s", "LAMBDATEST_BACKOFF_CAP=1m"},
		Mapping:  localesm.Config{BatchSize: 1, ReportBatchItemFailures: true},
	})
	testenv.Eventually(t, 30*time.Second, "three attempts", func() bool { return len(h.Calls(t, "B-1")) == 3 })
	calls := h.Calls(t, "B-1")
	for i, delay := range []time.Duration{time.Second, 2 * time.Second} {
		gap := calls[i+1].Time().Sub(calls[i].Time())
		// Lower bound: the delay itself (the call log has millisecond resolution). Upper
		// bound: the delay plus the emulator's visibility and long-poll latency.
		if gap < delay-10*time.Millisecond || gap > delay+1500*time.Millisecond {
			t.Errorf("gap before attempt %d = %v, want about %v", i+2, gap, delay)
		}
	}
}

// TestE2EDuplicates: the same job sent twice commits its side effect once, with the
// idempotency middleware (DynamoDB on the emulator) in the function.
func TestE2EDuplicates(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	esmtest.Send(t, client, queue.URL, `{"key":"D-1","sleep_ms":300}`, `{"key":"D-1","sleep_ms":300}`)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL: queue.URL,
		Timeout:  4 * time.Second, // the lease, and so the deferral of the duplicate, ends with it
		Env:      []string{"LAMBDATEST_IDEMPOTENCY_TABLE=" + table, "LAMBDATEST_BACKOFF_BASE=1s"},
		Mapping:  localesm.Config{BatchSize: 2, BatchingWindow: 300 * time.Millisecond, ReportBatchItemFailures: true},
	})
	// The queue's counts are approximate and can read 0 right after the sends: wait for
	// the effect first, then for the queue to drain (the duplicate settled).
	testenv.Eventually(t, 30*time.Second, "D-1's effect", func() bool { return h.Effects(t, "D-1") >= 1 })
	drained(t, client, queue.URL, 30*time.Second)
	if effects := h.Effects(t, "D-1"); effects != 1 {
		t.Errorf("effects[D-1] = %d, want 1", effects)
	}
	if calls := len(h.Calls(t, "D-1")); calls != 1 {
		t.Errorf("handler ran %d times for D-1, want 1", calls)
	}
}

// TestE2EBurst is C19 on the emulator: 50 messages of 300 ms each behind a mapping with
// maximum concurrency 2 (two execution environments). All are handled exactly once, the
// dead-letter queue stays empty, no message is received more than twice, and never more
// than two invocations run at once.
func TestE2EBurst(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 5})
	var bodies []string
	for i := range 50 {
		bodies = append(bodies, fmt.Sprintf(`{"key":"burst-%02d","sleep_ms":300}`, i))
	}
	esmtest.Send(t, client, queue.URL, bodies...)
	h := esmtest.Start(t, client, esmtest.Options{
		QueueURL:  queue.URL,
		Functions: 2,
		Env:       []string{"LAMBDATEST_CONCURRENCY=2"},
		Mapping:   localesm.Config{BatchSize: 10, MaximumConcurrency: 2, ReportBatchItemFailures: true},
	})
	// Every job's effect first, then the queue: the emulator's counts alone once read 0
	// while the last batch was still running.
	testenv.Eventually(t, 60*time.Second, "an effect of each of the 50 jobs", func() bool {
		for i := range 50 {
			if h.Effects(t, fmt.Sprintf("burst-%02d", i)) == 0 {
				return false
			}
		}
		return true
	})
	drained(t, client, queue.URL, 60*time.Second)
	for i := range 50 {
		key := fmt.Sprintf("burst-%02d", i)
		calls := h.Calls(t, key)
		if len(calls) != 1 || h.Effects(t, key) != 1 {
			t.Errorf("%s: %d calls, %d effects; want exactly one each", key, len(calls), h.Effects(t, key))
		}
		for _, call := range calls {
			if call.ReceiveCount > 2 {
				t.Errorf("%s received %d times", key, call.ReceiveCount)
			}
		}
	}
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible+inFlight != 0 {
		t.Errorf("dead-letter queue holds %d messages, want 0", visible+inFlight)
	}
	batches := h.Batches()
	peak := 0
	for _, batch := range batches {
		overlapping := 0
		for _, other := range batches {
			if !other.Start.After(batch.Start) && other.End.After(batch.Start) {
				overlapping++
			}
		}
		peak = max(peak, overlapping)
	}
	if peak > 2 {
		t.Errorf("%d invocations overlapped, want at most 2", peak)
	}
	for i, fn := range h.Functions {
		if initDuration, ok := fn.InitDuration(); ok {
			t.Logf("environment %d cold start (INIT REPORT): %v", i, initDuration)
		}
	}
}
