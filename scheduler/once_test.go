package scheduler_test

// The scheduler's promise end to end: a tick is enqueued at least once, and its handler,
// behind the idempotency middleware as the README wires it, runs exactly once, on a
// standard and a FIFO queue, when SQS accepts a send whose response is lost (CASES.md
// N16 (3); issue 19 item 1).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/scheduler"
)

// tickConsumer is the consumer the README wires for scheduled jobs: a poller whose mux
// runs the job type behind the idempotency middleware on the scheduler's table (the tick
// id is the message's idempotency key, the middleware's default key). It counts, per
// tick id, the messages delivered and the handler's runs.
type tickConsumer struct {
	mu        sync.Mutex
	runs      map[string]int
	delivered map[string]map[string]bool // tick id → message ids
}

func startTickConsumer(t *testing.T, sqsClient *sqs.Client, dynamo *dynamodb.Client, table, queueURL, jobType string) *tickConsumer {
	t.Helper()
	c := &tickConsumer{runs: map[string]int{}, delivered: map[string]map[string]bool{}}
	deliveries := func(next sqsworker.Handler) sqsworker.Handler { // outside the middleware: every copy
		return sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
			key, _ := m.StringAttribute(sqsworker.AttributeIdempotencyKey)
			c.mu.Lock()
			if c.delivered[key] == nil {
				c.delivered[key] = map[string]bool{}
			}
			c.delivered[key][m.ID] = true
			c.mu.Unlock()
			return next.Handle(ctx, m)
		})
	}
	once := idempotency.Middleware(idempotency.NewDynamoDBStore(dynamo, table), idempotency.Config{})
	mux := sqsworker.NewServeMux(sqsworker.RouteByJSONField(scheduler.JobTypeField))
	mux.RegisterFunc(jobType, func(ctx context.Context, m *sqsworker.Message) error {
		key, _ := m.StringAttribute(sqsworker.AttributeIdempotencyKey)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.runs[key]++
		return nil
	}, sqsworker.JobMiddleware(deliveries, once))
	consumer, err := poller.New(sqsClient, poller.Config{QueueURL: queueURL, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}, mux)
	require.NoError(t, err)
	require.NoError(t, consumer.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = consumer.Shutdown(ctx)
	})
	return c
}

// counts returns the handler's runs and the messages delivered, per tick id.
func (c *tickConsumer) counts() (runs, delivered map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	runs, delivered = map[string]int{}, map[string]int{}
	for key, n := range c.runs {
		runs[key] = n
	}
	for key, ids := range c.delivered {
		delivered[key] = len(ids)
	}
	return runs, delivered
}

// drained waits until the consumer has handled every message of queueURL.
func (c *tickConsumer) drained(t *testing.T, sqsClient *sqs.Client, queueURL string, ticks int) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, "the consumer handling every tick and the queue empty", func() bool {
		runs, _ := c.counts()
		visible, inFlight := testenv.Counts(t, sqsClient, queueURL)
		return len(runs) >= ticks && visible == 0 && inFlight == 0
	})
}

// observed collects a scheduler's events.
type observed struct {
	mu     sync.Mutex
	events []scheduler.Event
}

func (o *observed) ObserveScheduler(_ context.Context, ev scheduler.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, ev)
}

func (o *observed) of(kind scheduler.EventKind) []scheduler.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []scheduler.Event
	for _, ev := range o.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// SQS accepts the first tick's SendMessage and the response is lost (the proxy resets
// the connection after SQS answered). The tick is sent again, by the SDK's retry or
// (when every attempt's answer is lost) by the scheduler's next pass, so a standard queue
// holds a copy per accepted send and a FIFO queue one (the tick id is the deduplication
// id); the handler runs once per tick on both. Before the fix the unique key was released
// and the tick resent about 1 s later, and the README's consumer, without the
// middleware, ran the tick's handler once per copy.
func TestEmulatorLostSendResponseRunsTheTickOnce(t *testing.T) {
	t.Parallel()
	// resets: how many SendMessage answers are lost. One: the SDK's retry sends the copy.
	// Three (every attempt the SDK makes): the Send fails, and the scheduler sends the
	// tick again at its next pass.
	for _, c := range []struct {
		fifo   bool
		resets int
	}{{false, 1}, {true, 1}, {false, 3}, {true, 3}} {
		fifo := c.fifo
		name := fmt.Sprintf("%s/%d lost", map[bool]string{false: "standard", true: "FIFO"}[fifo], c.resets)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
			queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{FIFO: fifo})
			table := testenv.NewTable(t, dynamo)
			proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
			proxy.SetRules(faultproxy.Rule{Operations: []string{"SendMessage"}, Fraction: 1, Times: c.resets, Reset: true})
			proxied := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
			consumer := startTickConsumer(t, sqsClient, dynamo, table, queue.URL, "report")

			events := &observed{}
			ticks, err := scheduler.New(proxied, dynamo, scheduler.Config{
				Table: table, LeaseDuration: 5 * time.Second, Observer: events, Logger: slog.New(slog.DiscardHandler),
			}, []scheduler.Schedule{{Name: "report", Cron: "@every 2s", JobType: "report", Queue: queue.URL}})
			require.NoError(t, err)
			require.NoError(t, ticks.Start(context.Background()))
			t.Cleanup(func() { _ = ticks.Shutdown(context.Background()) })
			testenv.Eventually(t, 2*time.Minute, "three ticks enqueued", func() bool { return len(events.of(scheduler.EventTickEnqueued)) >= 3 })
			require.NoError(t, ticks.Shutdown(context.Background()))

			enqueued := events.of(scheduler.EventTickEnqueued)
			faulted := events.of(scheduler.EventTickClaimed)[0].TickID // the first SendMessage was this tick's
			consumer.drained(t, sqsClient, queue.URL, len(enqueued))
			runs, delivered := consumer.counts()
			sends, sdkRetries := 0, 0
			for _, call := range proxy.Calls() {
				if call.Operation == "SendMessage" {
					sends++
					if call.Attempt > 1 {
						sdkRetries++
					}
				}
			}
			attempt := 0
			for _, ev := range enqueued {
				if ev.TickID == faulted {
					attempt = ev.Attempt
				}
			}
			t.Logf("%s: %d SendMessage calls (%d SDK retries) for %d ticks; faulted tick %s recorded at send %d, delivered %d times",
				name, sends, sdkRetries, len(enqueued), faulted, attempt, delivered[faulted])
			for _, ev := range enqueued {
				assert.Equal(t, 1, runs[ev.TickID], "handler runs of tick %s", ev.TickID)
			}
			assert.Len(t, runs, len(enqueued), "no handler run for a tick not enqueued")
			assert.Equal(t, len(enqueued)+c.resets, sends, "every tick sent once, the faulted one once more per lost answer")
			wantAttempt := 1 // the SDK's retry went through
			if c.resets == 3 {
				wantAttempt = 2 // the scheduler's resend
			}
			assert.Equal(t, wantAttempt, attempt, "the send that recorded the faulted tick")
			wantCopies := c.resets + 1 // at least once: every accepted send is a copy
			if fifo {
				wantCopies = 1 // SQS drops the resends: same deduplication id within 5 minutes
			}
			assert.Equal(t, wantCopies, delivered[faulted], "copies of the faulted tick %s", faulted)
			for _, ev := range enqueued {
				if ev.TickID != faulted {
					assert.Equal(t, 1, delivered[ev.TickID], "copies of tick %s", ev.TickID)
				}
			}
		})
	}
}
