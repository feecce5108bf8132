package poller

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
)

// TestReceiveAsksOnlyForFreeSlots: with Concurrency 3 and two handlers blocked, the
// next ReceiveMessage asks for 1 message, and every receive requests all attributes.
func TestReceiveAsksOnlyForFreeSlots(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1), fakeMessage("m2", 1)})
	release := make(chan struct{})
	server := startServer(t, api, Config{Concurrency: 3}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		<-release
		return nil
	}))
	eventually(t, "a receive after the two messages", func() bool { return api.receiveCalls() >= 2 })
	api.mu.Lock()
	first, second := *api.receives[0], *api.receives[1]
	api.mu.Unlock()
	close(release)
	if first.MaxNumberOfMessages != 3 || second.MaxNumberOfMessages != 1 {
		t.Errorf("MaxNumberOfMessages = %d then %d, want 3 then 1", first.MaxNumberOfMessages, second.MaxNumberOfMessages)
	}
	if first.WaitTimeSeconds != 20 || len(first.MessageSystemAttributeNames) != 1 || first.MessageSystemAttributeNames[0] != types.MessageSystemAttributeNameAll ||
		len(first.MessageAttributeNames) != 1 || first.MessageAttributeNames[0] != "All" {
		t.Errorf("receive input = %+v, want WaitTimeSeconds 20 and All attributes", first)
	}
	eventually(t, "both deleted", func() bool { return server.Stats().Deleted == 2 })
}

// TestHandlerTimeout: at HandlerTimeout the handler's context is cancelled with cause
// ErrHandlerTimeout, heartbeats stop, and the message is retried with backoff even
// though the handler ignores the cancellation and keeps running.
func TestHandlerTimeout(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1)})
	stuck := make(chan struct{})
	causes := make(chan error, 1)
	logs := newLogRecorder()
	server := startServer(t, api, Config{
		// The first heartbeat is due 50 ms after the receive; the timeout leaves the
		// heartbeat goroutine 950 ms to run, as on a busy 2-core machine under -race
		// (300 ms was too short in 1 of 200 runs there).
		HandlerTimeout:      time.Second,
		HeartbeatInterval:   50 * time.Millisecond,
		VisibilityExtension: 2 * time.Second,
		Backoff:             testBackoff,
		Logger:              slog.New(logs),
	}, sqsworker.HandlerFunc(func(ctx context.Context, _ *sqsworker.Message) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		<-stuck // ignores the cancellation
		return nil
	}))
	t.Cleanup(func() { close(stuck) }) // runs before the server's shutdown
	if cause := <-causes; !errors.Is(cause, ErrHandlerTimeout) {
		t.Errorf("context cause = %v, want ErrHandlerTimeout", cause)
	}
	cancelledAt := time.Now()
	eventually(t, "the message is rescheduled", func() bool {
		_, visibilities, _, _ := api.recorded()
		return len(visibilities) == 1
	})
	_, visibilities, batches, _ := api.recorded()
	if visibilities[0].VisibilityTimeout != 3 {
		t.Errorf("VisibilityTimeout = %d, want the backoff's 3", visibilities[0].VisibilityTimeout)
	}
	if len(batches) < 1 {
		t.Errorf("no heartbeat before the timeout")
	}
	// The handler is still running: no heartbeat may follow the cancellation.
	time.Sleep(5 * 50 * time.Millisecond)
	_, _, after, _ := api.recorded()
	if len(after) != len(batches) {
		t.Errorf("%d heartbeats after the cancellation at %s", len(after)-len(batches), cancelledAt)
	}
	failures := logs.find(slog.LevelError, "poller: handler failed")
	if len(failures) != 1 || !strings.Contains(failures[0].attrs["error"], "handler timeout exceeded") {
		t.Errorf("failure logs = %+v", failures)
	}
	eventually(t, "nothing held", func() bool { return server.Stats().InFlight == 0 })
	if stats := server.Stats(); stats.Failed != 1 {
		t.Errorf("stats = %+v", stats)
	}
}

// TestHeartbeatFailureLoggedOnce: a heartbeat entry that fails (the handler deleted its
// own message) is logged once and ends that message's heartbeats; the server goes on.
func TestHeartbeatFailureLoggedOnce(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1)}, []types.Message{fakeMessage("m2", 1)})
	api.onVisibilityBatch = func(input *sqs.ChangeMessageVisibilityBatchInput) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
		output := &sqs.ChangeMessageVisibilityBatchOutput{}
		for _, entry := range input.Entries {
			if aws.ToString(entry.ReceiptHandle) == "rh-m1" {
				output.Failed = append(output.Failed, types.BatchResultErrorEntry{Id: entry.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
				continue
			}
			output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
		}
		return output, nil
	}
	logs := newLogRecorder()
	const interval = 50 * time.Millisecond
	failed := func() bool {
		return len(logs.find(slog.LevelWarn, "poller: heartbeat failed; no further heartbeats for this message")) > 0
	}
	server := startServer(t, api, Config{
		HeartbeatInterval:   interval,
		VisibilityExtension: 2 * time.Second,
		Logger:              slog.New(logs),
	}, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		if message.ID == "m1" {
			for !failed() {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(6 * interval) // six more heartbeat periods: none may be sent for m1
		}
		return nil
	}))
	eventually(t, "m1 and m2 deleted", func() bool { return server.Stats().Deleted == 2 })

	_, _, batches, _ := api.recorded()
	sent := 0
	for _, batch := range batches {
		for _, entry := range batch.Entries {
			if aws.ToString(entry.ReceiptHandle) == "rh-m1" {
				sent++
			}
		}
	}
	if sent != 1 {
		t.Errorf("%d heartbeats sent for m1, want 1 (none after the failure)", sent)
	}
	warnings := logs.find(slog.LevelWarn, "poller: heartbeat failed; no further heartbeats for this message")
	if len(warnings) != 1 || warnings[0].attrs["code"] != "ReceiptHandleIsInvalid" || warnings[0].attrs["message_id"] != "m1" {
		t.Errorf("heartbeat warnings = %+v, want exactly one for m1", warnings)
	}
	if stats := server.Stats(); stats.HeartbeatFailures != 1 {
		t.Errorf("stats = %+v", stats)
	}
}

// TestFIFOGroupsInOrderAndReleaseAfterFailure: messages of a group run one at a time, in
// order; groups run in parallel; after a failure the rest of the group is released
// (visibility 0) unhandled.
func TestFIFOGroupsInOrderAndReleaseAfterFailure(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	api.attributes["FifoQueue"] = "true"
	var batch []types.Message
	for _, item := range []struct{ id, group string }{{"a1", "g1"}, {"b1", "g2"}, {"a2", "g1"}, {"b2", "g2"}, {"a3", "g1"}, {"b3", "g2"}} {
		message := fakeMessage(item.id, 1)
		message.Attributes["MessageGroupId"] = item.group
		batch = append(batch, message)
	}
	api.batches = [][]types.Message{batch}

	var mu sync.Mutex
	var order []string
	running := map[string]int{}
	overlap := false
	bothGroupsRunning := make(chan struct{})
	var once sync.Once
	server := startServer(t, api, Config{Backoff: testBackoff}, sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		mu.Lock()
		order = append(order, message.ID)
		running[message.GroupID]++
		overlap = overlap || running[message.GroupID] > 1
		if running["g1"] > 0 && running["g2"] > 0 {
			once.Do(func() { close(bothGroupsRunning) })
		}
		mu.Unlock()
		if message.ID == "a1" || message.ID == "b1" {
			<-bothGroupsRunning // the groups must run in parallel to get past here
		}
		mu.Lock()
		running[message.GroupID]--
		mu.Unlock()
		if message.ID == "a2" {
			return errors.New("a2 fails")
		}
		return nil
	}))
	eventually(t, "every message settled", func() bool { return server.Stats().Received == 6 && settled(server) })

	mu.Lock()
	defer mu.Unlock()
	var g1, g2 []string
	for _, id := range order {
		if strings.HasPrefix(id, "a") {
			g1 = append(g1, id)
		} else {
			g2 = append(g2, id)
		}
	}
	if strings.Join(g1, ",") != "a1,a2" || strings.Join(g2, ",") != "b1,b2,b3" || overlap {
		t.Errorf("handled g1 %v, g2 %v (overlap %v); want a1,a2 and b1,b2,b3 one at a time", g1, g2, overlap)
	}
	_, _, batches, _ := api.recorded()
	var released []string
	for _, batch := range batches {
		for _, entry := range batch.Entries {
			if entry.VisibilityTimeout == 0 {
				released = append(released, aws.ToString(entry.ReceiptHandle))
			}
		}
	}
	if strings.Join(released, ",") != "rh-a3" {
		t.Errorf("released %v, want exactly [rh-a3]", released)
	}
	if stats := server.Stats(); stats.Deleted != 4 || stats.Failed != 1 || stats.Released != 1 {
		t.Errorf("stats = %+v, want 4 deleted, 1 failed, 1 released", stats)
	}
}

// TestShutdownDrains: a handler that finishes within DrainTimeout is deleted; one that
// does not is cancelled with cause ErrDrainTimeout and its message released
// (visibility 0); Shutdown returns nil.
func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("fast", 1), fakeMessage("slow", 1)})
	started := make(chan string, 2)
	causes := make(chan error, 1)
	server := startServer(t, api, Config{DrainTimeout: 500 * time.Millisecond}, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		started <- message.ID
		if message.ID == "fast" {
			time.Sleep(200 * time.Millisecond) // the work left at shutdown
			return nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	<-started
	<-started
	begin := time.Now()
	if err := server.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	took := time.Since(begin)
	if cause := <-causes; !errors.Is(cause, ErrDrainTimeout) {
		t.Errorf("slow handler's cause = %v, want ErrDrainTimeout", cause)
	}
	if took < 500*time.Millisecond || took > 2*time.Second {
		t.Errorf("Shutdown took %s, want the 500ms drain plus little", took)
	}
	deletes, visibilities, batches, _ := api.recorded()
	if len(deletes) != 1 || strings.Join(receipts(deletes[0]), ",") != "rh-fast" {
		t.Errorf("deletes = %d calls, want one for rh-fast", len(deletes))
	}
	released := batches[len(batches)-1].Entries
	if len(released) != 1 || aws.ToString(released[0].ReceiptHandle) != "rh-slow" || released[0].VisibilityTimeout != 0 {
		t.Errorf("last visibility change = %+v, want rh-slow to 0", released)
	}
	if len(visibilities) != 0 {
		t.Errorf("the aborted message was rescheduled with backoff instead of released")
	}
	if stats := server.Stats(); stats.Deleted != 1 || stats.Released != 1 || stats.Failed != 0 {
		t.Errorf("stats = %+v", stats)
	}
	if err := server.Start(context.Background()); err == nil {
		t.Error("Start after Shutdown succeeded")
	}
}

func TestRunReturnsNilWhenContextDone(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1)})
	server, err := New(api, Config{QueueURL: fakeQueueURL}, nopHandler)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- server.Run(ctx) }()
	eventually(t, "m1 deleted", func() bool { return server.Stats().Deleted == 1 })
	cancel()
	if err := <-result; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestHealthEndpoint(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1)})
	release := make(chan struct{})
	server := startServer(t, api, Config{HealthCheckAddress: "127.0.0.1:0"}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		<-release
		return nil
	}))
	address := server.health.address()
	if err := CheckHealth(context.Background(), address); err != nil {
		t.Fatalf("CheckHealth while running: %v", err)
	}
	eventually(t, "m1 held", func() bool { return server.Stats().InFlight == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- server.Shutdown(context.Background()) }()
	eventually(t, "503 while stopping", func() bool {
		err := CheckHealth(context.Background(), address)
		return err != nil && strings.Contains(err.Error(), "status 503")
	})
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if err := CheckHealth(context.Background(), address); err == nil {
		t.Error("CheckHealth succeeded after shutdown")
	}
}

// TestReceiveErrorsAreRateLimited: a failing ReceiveMessage is retried with a pause and
// logged once per interval, not once per call.
func TestReceiveErrorsAreRateLimited(t *testing.T) {
	t.Parallel()
	api := &failingReceiveAPI{fakeAPI: newFakeAPI()}
	logs := newLogRecorder()
	server := startServer(t, api, Config{Logger: slog.New(logs)}, nopHandler)
	eventually(t, "three failed receives", func() bool { return server.Stats().ReceiveErrors >= 3 })
	if got := logs.find(slog.LevelError, "poller: ReceiveMessage failed"); len(got) != 1 || got[0].attrs["code"] != "ServiceUnavailable" {
		t.Errorf("receive error logs = %+v, want exactly one, with the code", got)
	}
}

// failingReceiveAPI fails every ReceiveMessage.
type failingReceiveAPI struct{ *fakeAPI }

func (f *failingReceiveAPI) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "try again"}
}

// TestFIFORedeliveryWhileSettlingStartsGroupAfresh: the failed message is made visible
// again in the same ChangeMessageVisibilityBatch that releases the rest of its group
// (CASES.md N09), and may be received while that call is in flight. The redelivery
// starts the group afresh; it is not released with the rest.
func TestFIFORedeliveryWhileSettlingStartsGroupAfresh(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	api.attributes["FifoQueue"] = "true"
	grouped := func(id, receipt string, receiveCount int) types.Message {
		message := fakeMessage(id, receiveCount)
		message.ReceiptHandle = aws.String(receipt)
		message.Attributes["MessageGroupId"] = "g1"
		return message
	}
	api.batches = [][]types.Message{{grouped("a1", "rh-a1", 1), grouped("a2", "rh-a2", 1)}}
	redelivered := make(chan struct{})
	var once sync.Once
	api.onVisibilityBatch = func(input *sqs.ChangeMessageVisibilityBatchInput) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
		output := &sqs.ChangeMessageVisibilityBatchOutput{}
		for _, entry := range input.Entries {
			output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
		}
		once.Do(func() {
			// a1 is visible again: SQS hands it out before the call returns.
			api.mu.Lock()
			api.batches = append(api.batches, []types.Message{grouped("a1", "rh-a1-again", 2)})
			api.mu.Unlock()
			select {
			case <-redelivered:
			case <-time.After(10 * time.Second):
				t.Error("the redelivery was not handled while the release was in flight") // not Fatal: the server's goroutine
			}
		})
		return output, nil
	}
	var mu sync.Mutex
	var handled []string
	server := startServer(t, api, Config{}, sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		mu.Lock()
		handled = append(handled, message.ReceiptHandle)
		mu.Unlock()
		switch message.ReceiptHandle {
		case "rh-a1":
			return sqsworker.RetryAfter(0, errors.New("a1 fails once"))
		case "rh-a1-again":
			close(redelivered)
		}
		return nil
	}))
	eventually(t, "the redelivered a1 deleted", func() bool { return server.Stats().Deleted == 1 && settled(server) })
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(handled, ",") != "rh-a1,rh-a1-again" {
		t.Errorf("handled %v, want rh-a1 then rh-a1-again", handled)
	}
	_, visibilities, batches, _ := api.recorded()
	if len(visibilities) != 0 {
		t.Errorf("%d single ChangeMessageVisibility calls, want none: the reschedule goes out with the release", len(visibilities))
	}
	if len(batches) != 1 || len(batches[0].Entries) != 2 || aws.ToString(batches[0].Entries[0].ReceiptHandle) != "rh-a1" ||
		aws.ToString(batches[0].Entries[1].ReceiptHandle) != "rh-a2" {
		t.Errorf("visibility batches %+v, want one: rh-a1 rescheduled and rh-a2 released", batches)
	}
}
