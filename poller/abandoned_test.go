package poller

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// TestAbandonedHandlerCostsOnlyItsOwnGoroutine: ten handlers ignore their cancelled
// context (five of them beyond MaxAbandonedHandlers, so they keep their slots). Once
// they are abandoned, the server runs one goroutine per abandoned handler above its idle
// baseline: the handler's own, nothing of the poller's waiting beside it. When they
// return, the count is back at the baseline, their slots are free again (a new message
// is handled), and Stats shows none running. Before, each abandoned handler also kept
// its dispatcher goroutine waiting for it: 20 above the baseline.
//
// Not parallel: it counts the test binary's goroutines (parallel tests are paused while
// it runs).
func TestAbandonedHandlerCostsOnlyItsOwnGoroutine(t *testing.T) {
	const zombies = 10
	api := newFakeAPI()
	stuck := make(chan struct{})
	defer func() {
		select {
		case <-stuck:
		default:
			close(stuck)
		}
	}()
	server := startServer(t, api, Config{
		Concurrency: zombies, MaxAbandonedHandlers: zombies / 2, HandlerTimeout: 100 * time.Millisecond,
		WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler),
	}, sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		if message.ID != "ok" {
			<-stuck // ignores its context
		}
		return nil
	}))
	eventually(t, "the server receiving", func() bool { return api.receiveCalls() >= 2 })
	baseline := runtime.NumGoroutine()

	batch := make([]types.Message, zombies)
	for i := range batch {
		batch[i] = fakeMessage("z"+string(rune('0'+i)), 1)
	}
	api.mu.Lock()
	api.batches = append(api.batches, batch)
	api.mu.Unlock()
	eventually(t, "ten handlers abandoned", func() bool {
		stats := server.Stats()
		return stats.Abandoned == zombies && stats.AbandonedRunning == zombies
	})
	if above, ok := goroutinesSettle(baseline, zombies); !ok {
		t.Fatalf("%d goroutines above the idle baseline with %d abandoned handlers, want at most %d (their own)", above, zombies, zombies)
	}

	close(stuck)
	eventually(t, "none running after they returned", func() bool { return server.Stats().AbandonedRunning == 0 })
	if above, ok := goroutinesSettle(baseline, 0); !ok {
		t.Fatalf("%d goroutines above the idle baseline after the abandoned handlers returned, want 0", above)
	}
	api.mu.Lock()
	api.batches = append(api.batches, []types.Message{fakeMessage("ok", 1)})
	api.mu.Unlock()
	eventually(t, "a new message handled in the slots given back", func() bool { return server.Stats().Deleted == 1 })
}

// goroutinesSettle waits up to 10 s for the goroutine count to be at most baseline+want
// and returns how far above the baseline it was last.
func goroutinesSettle(baseline, want int) (above int, ok bool) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		above = runtime.NumGoroutine() - baseline
		if above <= want {
			return above, true
		}
		if time.Now().After(deadline) {
			return above, false
		}
	}
}
