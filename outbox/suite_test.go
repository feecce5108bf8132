package outbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

func webhookJob(order int) producer.Job {
	return producer.Job{Type: "order-webhook", Payload: map[string]int{"order": order}}
}

func newTestProducer(t *testing.T, api producer.API) *producer.Producer {
	t.Helper()
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	return p
}

func startRelay(t *testing.T, r *Relay) {
	t.Helper()
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, r.Shutdown(ctx))
	})
}

// consumer is the job's worker: the poller with the idempotency middleware (default key:
// the idempotency-key attribute, which is the entry id), counting side effects per entry.
type consumer struct {
	server  *poller.Server
	mu      sync.Mutex
	effects map[string]int // outbox id → handler runs
}

func startConsumer(t *testing.T, client *sqs.Client, queueURL string) *consumer {
	t.Helper()
	store := idempotency.NewDynamoDBStore(testenv.DynamoDB(t), testenv.NewTable(t, testenv.DynamoDB(t)))
	c := &consumer{effects: map[string]int{}}
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("order-webhook", func(ctx context.Context, m *sqsworker.Message) error {
		id, _ := m.StringAttribute(AttributeOutboxID)
		c.mu.Lock()
		c.effects[id]++
		c.mu.Unlock()
		return nil
	})
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second},
		sqsworker.Chain(mux, idempotency.Middleware(store, idempotency.Config{})))
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	c.server = server
	return c
}

func (c *consumer) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.effects))
	for k, v := range c.effects {
		out[k] = v
	}
	return out
}

// publishedExactly waits until the relays counted want published entries (they count
// after their store confirmed the removal, so shortly after the effect is visible), and
// checks they counted no more.
func publishedExactly(t *testing.T, want int64, relays ...*Relay) {
	t.Helper()
	sum := func() int64 {
		var n int64
		for _, r := range relays {
			n += r.Stats().Published
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d entries counted published", want), func() bool { return sum() >= want })
	assert.Equal(t, want, sum())
}

func ids(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

// onceEach asserts that each entry had exactly one side effect and nothing else had any.
func onceEach(t *testing.T, entries []Entry, effects map[string]int) {
	t.Helper()
	want := map[string]int{}
	for _, e := range entries {
		want[e.ID] = 1
	}
	assert.Equal(t, want, effects)
}

// recorder collects relay events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) ObserveOutbox(_ context.Context, ev Event) {
	if ev.Err != nil && testing.Verbose() {
		fmt.Printf("outbox event %s %s: %v\n", ev.Store, ev.Kind, ev.Err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) kinds(kind EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// drainQueue receives and deletes every message of queueURL until want messages were
// received, and returns the outbox ids in receive order.
func drainQueue(t *testing.T, client *sqs.Client, queueURL string, want int, timeout time.Duration) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	deadline := time.Now().Add(timeout)
	for len(got) < want {
		require.True(t, time.Now().Before(deadline), "received %d of %d messages within %s", len(got), want, timeout)
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		require.NoError(t, err)
		if len(output.Messages) == 0 {
			continue
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(output.Messages))
		for i, m := range output.Messages {
			got = append(got, m)
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		deleted, err := client.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, deleted.Failed)
	}
	return got
}

func outboxID(m sqstypes.Message) string {
	return aws.ToString(m.MessageAttributes[AttributeOutboxID].StringValue)
}

// queueEmpty waits until SQS counts no message in queueURL, visible, in flight or delayed.
func queueEmpty(t *testing.T, client *sqs.Client, queueURL string) {
	t.Helper()
	testenv.WaitQueueEmpty(t, client, queueURL, 15*time.Second)
}
