package poller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// gatedHandler records the order handlers start in and holds each until its message is
// let go (let) or the handler's context ends.
type gatedHandler struct {
	mu      sync.Mutex
	started []string
	gates   map[string]chan struct{}
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{gates: make(map[string]chan struct{})}
}

func (h *gatedHandler) gate(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gates[id]
	if !ok {
		g = make(chan struct{})
		h.gates[id] = g
	}
	return g
}

func (h *gatedHandler) Handle(ctx context.Context, m *sqsworker.Message) error {
	h.mu.Lock()
	h.started = append(h.started, m.ID)
	h.mu.Unlock()
	select {
	case <-h.gate(m.ID):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// let lets message id's handler return.
func (h *gatedHandler) let(id string) { close(h.gate(id)) }

func (h *gatedHandler) starts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.started)
}

func fakeMessages(ids ...string) []types.Message {
	messages := make([]types.Message, len(ids))
	for i, id := range ids {
		messages[i] = fakeMessage(id, 1)
	}
	return messages
}

// receiveSizes is the MaxNumberOfMessages of every receive so far.
func (f *fakeAPI) receiveSizes() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes := make([]int32, len(f.receives))
	for i, input := range f.receives {
		sizes[i] = input.MaxNumberOfMessages
	}
	return sizes
}

// releasedAtOnce counts, per receipt handle, the visibility-0 entries of
// ChangeMessageVisibilityBatch calls (releases).
func (f *fakeAPI) releasedAtOnce() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	released := make(map[string]int)
	for _, batch := range f.visibilityBatchs {
		for _, entry := range batch.Entries {
			if entry.VisibilityTimeout == 0 {
				released[aws.ToString(entry.ReceiptHandle)]++
			}
		}
	}
	return released
}

// deleted counts the delete entries per receipt handle.
func (f *fakeAPI) deleted() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	deleted := make(map[string]int)
	for _, batch := range f.deletes {
		for _, entry := range batch.Entries {
			deleted[aws.ToString(entry.ReceiptHandle)]++
		}
	}
	return deleted
}

// TestPrefetchStartsHeldMessagesInReceiveOrder: with Concurrency 1 and Prefetch 3 the
// first receive asks for 4; one handler runs, the other three wait and start one by one,
// in receive order, as the running one returns; the next receive waits until it can ask
// for Prefetch messages (3), not for the first freed slot.
func TestPrefetchStartsHeldMessagesInReceiveOrder(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(fakeMessages("m1", "m2", "m3", "m4"), fakeMessages("m5", "m6", "m7"))
	handler := newGatedHandler()
	startServer(t, api, Config{Concurrency: 1, Prefetch: 3, Logger: discardLogger()}, handler)

	eventually(t, "m1 starts", func() bool { return slices.Equal(handler.starts(), []string{"m1"}) })
	if sizes := api.receiveSizes(); !slices.Equal(sizes, []int32{4}) {
		t.Fatalf("receive sizes %v, want [4] (Concurrency 1 + Prefetch 3)", sizes)
	}
	handler.let("m1")
	eventually(t, "m2 starts", func() bool { return slices.Equal(handler.starts(), []string{"m1", "m2"}) })
	handler.let("m2")
	eventually(t, "m3 starts", func() bool { return slices.Equal(handler.starts(), []string{"m1", "m2", "m3"}) })
	// m4 and m3 hold two slots: fewer than Prefetch are free, so no receive yet.
	if sizes := api.receiveSizes(); !slices.Equal(sizes, []int32{4}) {
		t.Fatalf("receive sizes %v with 2 slots free, want still [4]", sizes)
	}
	handler.let("m3")
	eventually(t, "m4 starts and the second receive asks for 3", func() bool {
		sizes := api.receiveSizes()
		return slices.Equal(handler.starts(), []string{"m1", "m2", "m3", "m4"}) && len(sizes) >= 2 && sizes[1] == 3
	})
	for _, id := range []string{"m4", "m5", "m6"} {
		handler.let(id)
	}
	handler.let("m7")
	eventually(t, "all seven start in receive order and are deleted once", func() bool {
		deleted := api.deleted()
		return slices.Equal(handler.starts(), []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}) && len(deleted) == 7
	})
	for handle, n := range api.deleted() {
		if n != 1 {
			t.Errorf("%s deleted %d times, want 1", handle, n)
		}
	}
	if released := api.releasedAtOnce(); len(released) != 0 {
		t.Errorf("released %v, want none", released)
	}
}

// TestPrefetchFullBatchesUnderSlowHandlers: Concurrency 2, Prefetch 10: every receive
// asks for a full batch of 10 although the slow handlers free slots one at a time.
func TestPrefetchFullBatchesUnderSlowHandlers(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("m%02d", i))
	}
	api := newFakeAPI(fakeMessages(ids...))
	handled := make(chan string, len(ids))
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		time.Sleep(2 * time.Millisecond) // a slow handler: the slots free one by one
		handled <- m.ID
		return nil
	})
	startServer(t, api, Config{Concurrency: 2, Prefetch: 10, Receivers: 1, Logger: discardLogger()}, handler)
	for range ids {
		<-handled
	}
	eventually(t, "every message deleted", func() bool { return len(api.deleted()) == len(ids) })
	// 40 messages in 4 receives of 10, then empty receives of 10.
	sizes := api.receiveSizes()
	if len(sizes) < 4 {
		t.Fatalf("receive sizes %v, want at least 4 receives", sizes)
	}
	for i, size := range sizes {
		if size != 10 {
			t.Fatalf("receive %d asked for %d, want 10 (all: %v)", i, size, sizes)
		}
	}
}

// TestPrefetchHeldMessagesGetHeartbeats: a held message's visibility is extended from
// its receive on, while it waits for a turn.
func TestPrefetchHeldMessagesGetHeartbeats(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(fakeMessages("m1", "m2"))
	handler := newGatedHandler()
	startServer(t, api, Config{
		Concurrency:         1,
		Prefetch:            1,
		ReceiveVisibility:   time.Second, // the first heartbeat is due within 500 ms
		VisibilityExtension: 3 * time.Second,
		HeartbeatInterval:   time.Second,
		Logger:              discardLogger(),
	}, handler)
	eventually(t, "the held m2 gets a heartbeat", func() bool {
		_, _, batches, _ := api.recorded()
		for _, batch := range batches {
			for _, entry := range batch.Entries {
				if aws.ToString(entry.ReceiptHandle) == "rh-m2" && entry.VisibilityTimeout == 3 {
					return true
				}
			}
		}
		return false
	})
	if starts := handler.starts(); !slices.Equal(starts, []string{"m1"}) {
		t.Fatalf("started %v while m2 was held, want [m1]", starts)
	}
	handler.let("m1")
	handler.let("m2")
	eventually(t, "both deleted", func() bool { return len(api.deleted()) == 2 })
}

// TestPrefetchShutdownReleasesHeldMessages: a shutdown releases the held messages at once
// (visibility 0, once each) while the running handler goes on, and hands none of them to
// a handler; the running one finishes and is deleted.
func TestPrefetchShutdownReleasesHeldMessages(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(fakeMessages("m1", "m2", "m3", "m4"))
	handler := newGatedHandler()
	server := newServer(t, api, Config{Concurrency: 1, Prefetch: 3, Logger: discardLogger()}, handler)
	if err := server.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	eventually(t, "m1 starts", func() bool { return slices.Equal(handler.starts(), []string{"m1"}) })

	shutdown := make(chan error, 1)
	go func() { shutdown <- server.Shutdown(context.Background()) }()
	eventually(t, "m2, m3, m4 released while m1 runs", func() bool { return len(api.releasedAtOnce()) == 3 })
	handler.let("m1")
	select {
	case err := <-shutdown:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return within 10 s of m1's handler returning")
	}
	if starts := handler.starts(); !slices.Equal(starts, []string{"m1"}) {
		t.Errorf("started %v, want [m1]: no held message may start after the shutdown began", starts)
	}
	released := api.releasedAtOnce()
	for _, id := range []string{"m2", "m3", "m4"} {
		if released["rh-"+id] != 1 {
			t.Errorf("%s released %d times, want 1 (all: %v)", id, released["rh-"+id], released)
		}
	}
	if deleted := api.deleted(); len(deleted) != 1 || deleted["rh-m1"] != 1 {
		t.Errorf("deleted %v, want m1 once", deleted)
	}
}

// TestPrefetchFIFOGroupOrder: on a FIFO queue prefetched messages keep the group rule:
// one message of a group at a time, in order.
func TestPrefetchFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	messages := fakeMessages("a1", "b1", "a2", "b2", "a3", "b3")
	for i := range messages {
		messages[i].Attributes["MessageGroupId"] = aws.ToString(messages[i].MessageId)[:1]
	}
	api := newFakeAPI(messages)
	api.attributes["FifoQueue"] = "true"
	var mu sync.Mutex
	var order []string
	running := map[string]int{}
	overlap := false
	startServer(t, api, Config{Concurrency: 1, Prefetch: 5, Logger: discardLogger()}, sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		mu.Lock()
		order = append(order, m.ID)
		running[m.GroupID]++
		overlap = overlap || running[m.GroupID] > 1
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running[m.GroupID]--
		mu.Unlock()
		return nil
	}))
	eventually(t, "all six handled", func() bool { return len(api.deleted()) == 6 })
	mu.Lock()
	defer mu.Unlock()
	if sizes := api.receiveSizes(); sizes[0] != 6 {
		t.Errorf("first receive asked for %d, want 6 (Concurrency 1 + Prefetch 5)", sizes[0])
	}
	for _, group := range []string{"a", "b"} {
		var got []string
		for _, id := range order {
			if strings.HasPrefix(id, group) {
				got = append(got, id)
			}
		}
		if want := []string{group + "1", group + "2", group + "3"}; !slices.Equal(got, want) {
			t.Errorf("group %s ran %v, want %v (all: %v)", group, got, want, order)
		}
	}
	if overlap {
		t.Error("two messages of one group ran at once")
	}
}

// TestPrefetchConfigRefusals: Prefetch is bounded by one batch and refused with rate
// and job-type limits.
func TestPrefetchConfigRefusals(t *testing.T) {
	t.Parallel()
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	for name, tc := range map[string]struct {
		config Config
		want   string
	}{
		"negative": {Config{QueueURL: fakeQueueURL, Prefetch: -1}, "Config.Prefetch -1 is outside 0..10"},
		"above 10": {Config{QueueURL: fakeQueueURL, Prefetch: 11}, "Config.Prefetch 11 is outside 0..10"},
		"job type limits": {
			Config{QueueURL: fakeQueueURL, Prefetch: 2, JobTypeLimits: map[string]Limit{"email": {MaxConcurrency: 1}}},
			"Config.Prefetch 2 cannot be combined with Config.JobTypeLimits",
		},
		"queue rate": {
			Config{Prefetch: 2, Queues: []QueueConfig{{URL: fakeQueueURL}, {URL: fakeQueueURL + "2", Limit: Limit{RatePerSecond: 5}}}},
			"Config.Prefetch 2 cannot be combined with Config.Queues[1].Limit.RatePerSecond",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(newFakeAPI(), tc.config, handler)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(newFakeAPI(), Config{QueueURL: fakeQueueURL, Prefetch: 10}, handler); err != nil {
		t.Fatalf("New with Prefetch 10: %v", err)
	}
}
