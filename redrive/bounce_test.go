package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/redrive"
)

// A move runs while the worker still fails every job (issue 19, item 4: `redrive move`
// printed "Moved 1923 of 1926" for one message, x-redrive-count=1923). The copies it sends
// come back into the dead-letter queue during the move: at once, as the worker's own
// dead-letter copies of a permanent failure, or through the redrive policy after
// maxReceiveCount (2) receives. Every message present when the move started is moved
// exactly once, the move stops by itself, and what it brought back stays in the
// dead-letter queue, each with x-redrive-count 1 and the move's id.
func TestMoverLeavesWhatItBroughtBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		failure         error
		maxReceiveCount int
	}{
		{name: "worker's dead-letter copy", failure: sqsworker.Permanent("Broken", errors.New("the job always fails")), maxReceiveCount: 3},
		{name: "redrive policy", failure: errors.New("the job always fails"), maxReceiveCount: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 25 // more than one receive's worth, so returns mix with originals
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: tc.maxReceiveCount, VisibilityTimeout: 5 * time.Second})
			failing(t, client, queue.URL, tc.failure)
			var bodies []string
			for i := range n {
				bodies = append(bodies, body("b"+strconv.Itoa(i), 0))
			}
			sendAll(t, client, queue.URL, bodies, nil)
			testenv.Eventually(t, testenv.WaitTimeout, fmt.Sprintf("the worker dead-lettered all %d messages", n), func() bool {
				visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
				return visible+inFlight == n
			})

			// The move, with the worker still running; a second send of any body is the
			// bounce, and ends the run at once.
			ctx, cancel := context.WithTimeout(t.Context(), testenv.WaitTimeout)
			defer cancel()
			counter := &sendCounter{MoverAPI: client, t: t, bounce: cancel, sent: map[string]int{}}
			mover := mustMover(t, counter, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL,
				// A long poll: a copy that comes back while the move waits is received by it.
				WaitTime: 5 * time.Second})
			result, err := mover.Run(ctx)
			if err != nil {
				t.Fatalf("Run: %v; sends by body: %v (result %+v)", err, counter.counts(), result)
			}
			if sent := counter.counts(); len(sent) != n || result.Moved != n || result.Received != n {
				t.Fatalf("moved %d of %d received, sends by body %v; want each of the %d messages moved once (result %+v)",
					result.Moved, result.Received, sent, n, result)
			}
			for id, times := range counter.counts() {
				if times != 1 {
					t.Fatalf("message %s was sent %d times, want 1", id, times)
				}
			}

			// Everything comes back, once each, and stays.
			testenv.Eventually(t, testenv.WaitTimeout, fmt.Sprintf("all %d copies back in the dead-letter queue", n), func() bool {
				visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
				return visible+inFlight == n
			})
			back := drain(t, client, queue.DeadLetterQueueURL, n)
			if counts := countIDs(t, back); len(counts) != n {
				t.Fatalf("the dead-letter queue holds %v, want each of the %d bodies once", counts, n)
			}
			for _, message := range back {
				count := aws.ToString(message.MessageAttributes[redrive.AttributeRedriveCount].StringValue)
				move := aws.ToString(message.MessageAttributes[redrive.AttributeMoveID].StringValue)
				if count != "1" || move != result.MoveID {
					t.Fatalf("message %s came back with %s=%q and %s=%q, want 1 and %q",
						aws.ToString(message.Body), redrive.AttributeRedriveCount, count, redrive.AttributeMoveID, move, result.MoveID)
				}
			}
		})
	}
}

// failing runs a poller on queueURL whose handler fails every job with failure, retrying
// at once (backoff 1 ms), until the test ends.
func failing(t *testing.T, client *sqs.Client, queueURL string, failure error) {
	t.Helper()
	server, err := poller.New(client, poller.Config{
		QueueURL: queueURL, WaitTime: time.Second, AllowLowMaxReceiveCount: true, Logger: slog.New(slog.DiscardHandler),
		Backoff: sqsworker.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
	}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return failure }))
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitTimeout)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			t.Errorf("stopping the worker: %v", err)
		}
	})
}

// sendCounter counts the entries the mover sends, by body id, and calls bounce when a
// body is sent a second time.
type sendCounter struct {
	redrive.MoverAPI
	t      testing.TB
	bounce func()

	mu   sync.Mutex
	sent map[string]int
}

func (c *sendCounter) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	for _, entry := range input.Entries {
		id := idOf(c.t, aws.ToString(entry.MessageBody))
		if c.sent[id]++; c.sent[id] > 1 {
			c.bounce()
		}
	}
	c.mu.Unlock()
	return c.MoverAPI.SendMessageBatch(ctx, input, optFns...)
}

func (c *sendCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := make(map[string]int, len(c.sent))
	for id, times := range c.sent {
		counts[id] = times
	}
	return counts
}
