package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// failEntry answers a DeleteMessageBatch with every entry deleted except the one with
// receipt handle receipt, which fails with code and senderFault.
func failEntry(input *sqs.DeleteMessageBatchInput, receipt, code string, senderFault bool) *sqs.DeleteMessageBatchOutput {
	output := &sqs.DeleteMessageBatchOutput{}
	for _, entry := range input.Entries {
		if aws.ToString(entry.ReceiptHandle) == receipt {
			output.Failed = append(output.Failed, types.BatchResultErrorEntry{
				Id: entry.Id, Code: aws.String(code), SenderFault: senderFault, Message: aws.String("injected"),
			})
			continue
		}
		output.Successful = append(output.Successful, types.DeleteMessageBatchResultEntry{Id: entry.Id})
	}
	return output
}

func receipts(input *sqs.DeleteMessageBatchInput) []string {
	var handles []string
	for _, entry := range input.Entries {
		handles = append(handles, aws.ToString(entry.ReceiptHandle))
	}
	return handles
}

// handleFiveTogether returns m1..m5 in one receive and a handler that lets them finish
// only together, so their deletes land in one batch.
func handleFiveTogether() ([]types.Message, sqsworker.Handler) {
	var started sync.WaitGroup
	started.Add(5)
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		started.Done()
		started.Wait()
		return nil
	})
	var messages []types.Message
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		messages = append(messages, fakeMessage(id, 1))
	}
	return messages, handler
}

// TestDeleteBatchRetriesOnlyFailedEntry is C12: DeleteMessageBatch answers 200 with m3
// failed (InternalError, not the sender's fault). Only m3 is retried, alone, with the
// same receipt handle: exactly 2 calls. "deleted" reaches 5 only once the retry is
// confirmed.
func TestDeleteBatchRetriesOnlyFailedEntry(t *testing.T) {
	t.Parallel()
	messages, handler := handleFiveTogether()
	api := newFakeAPI(messages)
	secondCall := make(chan struct{})
	confirm := make(chan struct{})
	api.onDelete = func(call int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		if call == 1 {
			return failEntry(input, "rh-m3", "InternalError", false), nil
		}
		close(secondCall)
		<-confirm // hold the retry's answer until the test has looked at the counters
		return deleteAll(input), nil
	}
	server := startServer(t, api, Config{DeleteFlushInterval: 300 * time.Millisecond}, handler)

	select {
	case <-secondCall:
	case <-time.After(10 * time.Second):
		t.Fatal("no retry of the failed delete")
	}
	if got := server.Stats().Deleted; got != 4 {
		t.Errorf("deleted = %d before the retry was confirmed, want 4", got)
	}
	close(confirm)
	eventually(t, "deleted reaches 5", func() bool { return server.Stats().Deleted == 5 })
	if err := server.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	deletes, _, _, _ := api.recorded()
	if len(deletes) != 2 {
		t.Fatalf("%d DeleteMessageBatch calls, want exactly 2", len(deletes))
	}
	if got := receipts(deletes[0]); len(got) != 5 {
		t.Errorf("first call deleted %v, want m1..m5", got)
	}
	if got := receipts(deletes[1]); len(got) != 1 || got[0] != "rh-m3" {
		t.Errorf("second call deleted %v, want exactly [rh-m3]", got)
	}
	if stats := server.Stats(); stats.Deleted != 5 || stats.DeleteFailures != 0 {
		t.Errorf("stats = %+v", stats)
	}
}

// TestDeleteBatchSenderFaultIsNotRetried is C12's SenderFault:true variant: no retry,
// an error log with the code.
func TestDeleteBatchSenderFaultIsNotRetried(t *testing.T) {
	t.Parallel()
	messages, handler := handleFiveTogether()
	api := newFakeAPI(messages)
	api.onDelete = func(_ int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		return failEntry(input, "rh-m3", "ReceiptHandleIsInvalid", true), nil
	}
	logs := newLogRecorder()
	server := startServer(t, api, Config{DeleteFlushInterval: 300 * time.Millisecond, Logger: slog.New(logs)}, handler)
	eventually(t, "the delete failure is counted", func() bool { return server.Stats().DeleteFailures == 1 })
	// Issue 9: the unconfirmed delete is reported to the caller, with its count.
	if err := server.Shutdown(context.Background()); !errors.Is(err, ErrDeletesNotConfirmed) || !strings.Contains(err.Error(), "1 handled message(s)") {
		t.Fatalf("Shutdown = %v; want ErrDeletesNotConfirmed with the count 1", err)
	}

	deletes, _, _, _ := api.recorded()
	if len(deletes) != 1 || len(deletes[0].Entries) != 5 {
		t.Errorf("%d DeleteMessageBatch calls, want exactly 1 with 5 entries", len(deletes))
	}
	errorsLogged := logs.find(slog.LevelError, "poller: delete rejected (sender fault); not retried, the message will be delivered again")
	if len(errorsLogged) != 1 || errorsLogged[0].attrs["code"] != "ReceiptHandleIsInvalid" || errorsLogged[0].attrs["message_id"] != "m3" {
		t.Errorf("error logs = %+v, want one for m3 with code ReceiptHandleIsInvalid", errorsLogged)
	}
	if stats := server.Stats(); stats.Deleted != 4 || stats.DeleteFailures != 1 {
		t.Errorf("stats = %+v, want 4 deleted and 1 delete failure", stats)
	}
}

// TestDeleteRetriesStopWhenReceiptExpires is C12's second variant: every retry of m3
// fails; the retries stop before the receipt handle's visibility runs out, and the
// failure is logged as an error.
func TestDeleteRetriesStopWhenReceiptExpires(t *testing.T) {
	t.Parallel()
	messages, handler := handleFiveTogether()
	api := newFakeAPI(messages)
	// 3 s: retries are at least 200 ms apart, doubling, with jitter (N12).
	api.attributes["VisibilityTimeout"] = "3"
	api.onDelete = func(_ int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		return failEntry(input, "rh-m3", "InternalError", false), nil
	}
	logs := newLogRecorder()
	started := time.Now()
	server := startServer(t, api, Config{Logger: slog.New(logs)}, handler)
	eventually(t, "the delete failure is counted", func() bool { return server.Stats().DeleteFailures == 1 })
	gaveUpAfter := time.Since(started)

	// The five handlers finish together, but on a busy machine not always within one
	// flush: the first deletes may take more than one call. So calls are told apart by
	// what they hold: every other message is deleted exactly once, and after m3's first
	// delete each call holding m3 is a retry of m3 alone.
	deletes, _, _, _ := api.recorded()
	seen := map[string]int{}
	retries := 0
	for _, call := range deletes {
		got := receipts(call)
		if seen["rh-m3"] > 0 && slices.Contains(got, "rh-m3") {
			retries++
			if len(got) != 1 {
				t.Errorf("retry deleted %v, want exactly [rh-m3]", got)
			}
		}
		for _, handle := range got {
			seen[handle]++
		}
	}
	if retries < 2 {
		t.Errorf("%d retries of m3's delete in %d DeleteMessageBatch calls, want several", retries, len(deletes))
	}
	for _, handle := range []string{"rh-m1", "rh-m2", "rh-m4", "rh-m5"} {
		if seen[handle] != 1 {
			t.Errorf("%s was in %d delete calls, want 1", handle, seen[handle])
		}
	}
	if gaveUpAfter > 3*time.Second {
		t.Errorf("gave up after %s, after the 3s visibility ran out", gaveUpAfter)
	}
	if got := logs.find(slog.LevelError, "poller: delete failed until the receipt handle expired; the message will be delivered again"); len(got) != 1 || got[0].attrs["code"] != "InternalError" {
		t.Errorf("error logs = %+v", got)
	}
	if stats := server.Stats(); stats.Deleted != 4 {
		t.Errorf("deleted = %d, want 4", stats.Deleted)
	}
}

func TestDeletesInFlight(t *testing.T) {
	t.Parallel()
	for concurrency, want := range map[int]int{1: 4, 10: 4, 20: 4, 40: 4, 41: 5, 100: 10, 200: 20} {
		if got := deletesInFlight(concurrency); got != want {
			t.Errorf("deletesInFlight(%d) = %d, want %d", concurrency, got, want)
		}
	}
}

// messages returns n fake messages m001..mNNN, received for the first time.
func messages(n int) []types.Message {
	out := make([]types.Message, n)
	for i := range out {
		out[i] = fakeMessage(fmt.Sprintf("m%03d", i+1), 1)
	}
	return out
}

// pendingDeletes is how many deletes wait in a's queue (not yet taken by a call).
func pendingDeletes(a *acker) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

// TestDeleteCallsInFlightAreBounded: with Concurrency 20 the acker keeps 4
// DeleteMessageBatch calls in flight, never a 5th while 40 more deletes wait; the
// waiting deletes fill the next calls, so 80 messages take exactly 8 calls of 10, and
// each counts as deleted only once its call answered.
func TestDeleteCallsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(messages(80))
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	api.onDelete = func(_ int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		return deleteAll(input), nil
	}
	// The longest flush interval: no partial batch is sent before the full ones.
	server := startServer(t, api, Config{Concurrency: 20, DeleteFlushInterval: 5 * time.Second},
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	eventually(t, "4 calls in flight and the other 40 deletes waiting", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight == 4 && pendingDeletes(server.queues[0].acker) == 40
	})
	if got := server.Stats().Deleted; got != 0 {
		t.Errorf("deleted = %d before any call answered, want 0", got)
	}
	close(release)
	eventually(t, "deleted reaches 80", func() bool { return server.Stats().Deleted == 80 })
	if err := server.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 4 {
		t.Errorf("at most %d calls were in flight, want 4", most)
	}
	deletes, _, _, _ := api.recorded()
	seen := map[string]int{}
	for _, call := range deletes {
		if len(call.Entries) != 10 {
			t.Errorf("a call deleted %d messages, want 10", len(call.Entries))
		}
		for _, handle := range receipts(call) {
			seen[handle]++
		}
	}
	if len(deletes) != 8 || len(seen) != 80 {
		t.Errorf("%d DeleteMessageBatch calls for %d distinct messages, want 8 for 80", len(deletes), len(seen))
	}
	for handle, n := range seen {
		if n != 1 {
			t.Errorf("%s was in %d calls, want 1", handle, n)
		}
	}
}

// TestShutdownWaitsForDeleteCallsInFlight: two calls are in flight when the acker is
// told to stop, and one answers with an entry failed (InternalError). The final flush
// waits for both, retries that entry alone and Shutdown returns only once all 20 are
// confirmed deleted.
func TestShutdownWaitsForDeleteCallsInFlight(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(messages(20))
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight := 0
	api.onDelete = func(call int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		if len(input.Entries) == 1 {
			return deleteAll(input), nil // the retry
		}
		mu.Lock()
		inFlight++
		mu.Unlock()
		<-release
		if slices.Contains(receipts(input), "rh-m007") {
			return failEntry(input, "rh-m007", "InternalError", false), nil
		}
		return deleteAll(input), nil
	}
	server := startServer(t, api, Config{Concurrency: 20, DeleteFlushInterval: 5 * time.Second},
		sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	eventually(t, "2 calls in flight", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight == 2
	})
	shutdown := make(chan error, 1)
	go func() { shutdown <- server.Shutdown(context.Background()) }()
	eventually(t, "the acker is told to stop", func() bool {
		select {
		case <-server.queues[0].acker.stop:
			return true
		default:
			return false
		}
	})
	close(release)
	select {
	case err := <-shutdown:
		if err != nil {
			t.Fatalf("Shutdown = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if stats := server.Stats(); stats.Deleted != 20 || stats.DeleteFailures != 0 {
		t.Errorf("stats = %+v, want 20 deleted and no delete failure", stats)
	}
	deletes, _, _, _ := api.recorded()
	if len(deletes) != 3 {
		t.Fatalf("%d DeleteMessageBatch calls, want 3", len(deletes))
	}
	if got := receipts(deletes[2]); len(got) != 1 || got[0] != "rh-m007" {
		t.Errorf("third call deleted %v, want exactly [rh-m007]", got)
	}
}
