package poller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestEmulatorPrefetchDrainReleasesHeldMessages: a server with Prefetch holds messages
// beyond Concurrency; a shutdown releases them at once (visible again within seconds,
// not after the queue's 60 s visibility timeout) while the running handler finishes,
// and a second server handles them: every message is handled exactly once.
func TestEmulatorPrefetchDrainReleasesHeldMessages(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: time.Minute, MaxReceiveCount: 5})
	const total = 6
	for i := range total {
		sendMessage(t, client, queue.URL, fmt.Sprintf("m%d", i), "")
	}

	var mu sync.Mutex
	handled := map[string]int{}
	first := make(chan string, 1)
	gate := make(chan struct{})
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		mu.Lock()
		handled[m.Body]++
		mu.Unlock()
		select {
		case first <- m.Body: // the first call waits for the gate
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
		}
		return nil
	})
	server := newServer(t, client, Config{QueueURL: queue.URL, Concurrency: 1, Prefetch: total - 1, Logger: discardLogger()}, handler)
	if err := server.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	running := testenv.Recv(t, first, testenv.WaitTimeout, "the first handler call")
	testenv.Eventually(t, 30*time.Second, "a message held beyond Concurrency", func() bool { return server.Stats().Received >= 2 })

	shutdown := make(chan error, 1)
	go func() { shutdown <- server.Shutdown(context.Background()) }()
	var held int64
	testenv.Eventually(t, 30*time.Second, "the held messages released while the handler runs", func() bool {
		stats := server.Stats()
		held = stats.Received - 1
		return stats.Released == held
	})
	// Everything but the running message is visible now: the held ones were released.
	visible := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), VisibilityTimeout: 1}, total-1, 5*time.Second)
	var bodies []string
	for _, m := range visible {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if len(bodies) != total-1 || slices.Contains(bodies, running) {
		t.Fatalf("visible after the release: %v, want the %d messages other than %s", bodies, total-1, running)
	}
	close(gate)
	if err := testenv.Recv(t, shutdown, testenv.WaitTimeout, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	mu.Lock()
	if len(handled) != 1 || handled[running] != 1 {
		t.Fatalf("the draining server handled %v, want only %s once (held %d)", handled, running, held)
	}
	mu.Unlock()

	second := startServer(t, client, Config{QueueURL: queue.URL, Concurrency: 2, Prefetch: 2, Logger: discardLogger()}, handler)
	testenv.Eventually(t, 60*time.Second, "the second server deletes the rest", func() bool { return second.Stats().Deleted == total-1 })
	mu.Lock()
	defer mu.Unlock()
	for i := range total {
		if body := fmt.Sprintf("m%d", i); handled[body] != 1 {
			t.Errorf("%s handled %d times, want 1 (all: %v)", body, handled[body], handled)
		}
	}
}
