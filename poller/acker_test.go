package poller

import (
	"context"
	"errors"
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
