package outboxtest

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
)

// The helpers below are exported for the stores' own tests (those of what only one
// store does), which drive relays and read queues the way the suite does.

// JobType is the job type of [Job].
const JobType = "order-webhook"

// Job returns a job of type JobType whose payload names order n.
func Job(n int) producer.Job {
	return producer.Job{Type: JobType, Payload: map[string]int{"order": n}}
}

// GroupJob returns [Job](n) in FIFO message group group.
func GroupJob(group string, n int) producer.Job {
	job := Job(n)
	job.GroupID = group
	return job
}

// NewProducer returns a producer over api with the default configuration.
func NewProducer(t testing.TB, api producer.API) *producer.Producer {
	t.Helper()
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	return p
}

// StartRelay starts r and shuts it down (within 10 s) when the test ends.
func StartRelay(t testing.TB, r *outbox.Relay) {
	t.Helper()
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, r.Shutdown(ctx))
	})
}

// IDs returns the ids of entries, in order.
func IDs(entries []outbox.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

// OutboxID returns the [outbox.AttributeOutboxID] attribute of m.
func OutboxID(m sqstypes.Message) string {
	return aws.ToString(m.MessageAttributes[outbox.AttributeOutboxID].StringValue)
}

// Drain receives and deletes messages of queueURL until want were received (failing t
// after timeout), and returns them in receive order, with their attributes and
// MessageGroupId. Its receives hide what they take for drainVisibility only, and a
// message received again (same message id) counts once: a receive whose answer was lost
// (seen on a loaded emulator; the SDK retries it) hides its messages, and on a FIFO queue
// their groups, for that long rather than the queue's 30 s, which held a FIFO test's
// last messages past its timeout.
func Drain(t testing.TB, client *sqs.Client, queueURL string, want int, timeout time.Duration) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	seen := map[string]bool{}
	deadline := time.Now().Add(timeout)
	for len(got) < want {
		require.True(t, time.Now().Before(deadline), "received %d of %d messages within %s", len(got), want, timeout)
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			VisibilityTimeout:           int32(drainVisibility / time.Second),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
		})
		require.NoError(t, err)
		if len(output.Messages) == 0 {
			continue
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(output.Messages))
		for i, m := range output.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				got = append(got, m)
			}
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		deleted, err := client.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, deleted.Failed)
	}
	return got
}

// drainVisibility is how long a receive of [Drain] hides its messages: far longer than
// its delete takes, short beside the tests' timeouts.
const drainVisibility = 5 * time.Second

// DrainIDs is [Drain], returning the messages' outbox ids.
func DrainIDs(t testing.TB, client *sqs.Client, queueURL string, want int, timeout time.Duration) []string {
	t.Helper()
	var out []string
	for _, m := range Drain(t, client, queueURL, want, timeout) {
		out = append(out, OutboxID(m))
	}
	return out
}

// PublishedExactly waits until the relays counted want published entries (they count
// once their store recorded the publish, so shortly after the message is visible), and
// checks they counted no more.
func PublishedExactly(t testing.TB, want int64, relays ...*outbox.Relay) {
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

// Recorder is an [outbox.Observer] that keeps every event.
type Recorder struct {
	mu     sync.Mutex
	events []outbox.Event
}

// ObserveOutbox records ev.
func (r *Recorder) ObserveOutbox(_ context.Context, ev outbox.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// Kinds returns the events of kind, in the order observed.
func (r *Recorder) Kinds(kind outbox.EventKind) []outbox.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []outbox.Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// Consumer is the job's worker: the poller with the idempotency middleware (a memory
// store; default key: the idempotency-key attribute, which is the entry id), counting
// the handler's side effects per entry.
type Consumer struct {
	server  *poller.Server
	mu      sync.Mutex
	effects map[string]int // outbox id → handler runs
}

// StartConsumer starts the Consumer of queueURL's JobType messages and stops it when
// the test ends.
func StartConsumer(t testing.TB, client *sqs.Client, queueURL string) *Consumer {
	t.Helper()
	c := &Consumer{effects: map[string]int{}}
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc(JobType, func(ctx context.Context, m *sqsworker.Message) error {
		id, _ := m.StringAttribute(outbox.AttributeOutboxID)
		c.mu.Lock()
		c.effects[id]++
		c.mu.Unlock()
		return nil
	})
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second},
		sqsworker.Chain(mux, idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{})))
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

// Deleted is the number of messages the consumer deleted (handled, or absorbed as
// repeats by the idempotency middleware).
func (c *Consumer) Deleted() int64 { return c.server.Stats().Deleted }

// Effects returns the handler's runs so far, by outbox id.
func (c *Consumer) Effects() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.effects)
}

// OnceEach asserts that each entry had exactly one side effect and nothing else had any.
func OnceEach(t testing.TB, entries []outbox.Entry, effects map[string]int) {
	t.Helper()
	want := map[string]int{}
	for _, e := range entries {
		want[e.ID] = 1
	}
	assert.Equal(t, want, effects)
}

// newRelay returns a relay over a new store of h.
func newRelay(t *testing.T, h Harness, p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(h.Store(t, lease), p, config)
	require.NoError(t, err)
	return r
}

// claim takes up to limit entries with a new store of h (leased for storeLease), and
// releases the claim and closes the store when the test ends (after a Crash, the
// release must change nothing).
func claim(t *testing.T, h Harness, storeLease time.Duration, limit int) (outbox.Store, outbox.Claim) {
	t.Helper()
	s := h.Store(t, storeLease)
	c, err := s.Claim(context.Background(), limit, 0)
	require.NoError(t, err)
	require.NotNil(t, c)
	t.Cleanup(func() {
		c.Release(context.Background())
		s.Close()
	})
	return s, c
}

func claimedIDs(c outbox.Claim) []string {
	var out []string
	for _, e := range c.Entries() {
		out = append(out, e.ID)
	}
	return out
}

// queueEmpty waits until SQS counts no message in queueURL, visible, in flight or delayed.
func queueEmpty(t *testing.T, client *sqs.Client, queueURL string) {
	t.Helper()
	testenv.WaitQueueEmpty(t, client, queueURL, 15*time.Second)
}

// byGroup returns the outbox ids of messages, by message group, in receive order.
func byGroup(messages []sqstypes.Message) map[string][]string {
	out := map[string][]string{}
	for _, m := range messages {
		group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
		out[group] = append(out[group], OutboxID(m))
	}
	return out
}

// failed, parked and summary read h's outbox through its operator.
func failed(t *testing.T, h Harness) []outbox.Entry {
	t.Helper()
	entries, err := h.Operator().Failed(context.Background(), 1000)
	require.NoError(t, err)
	return entries
}

func parked(t *testing.T, h Harness) []outbox.ParkedGroup {
	t.Helper()
	groups, err := h.Operator().Parked(context.Background(), 1000)
	require.NoError(t, err)
	return groups
}

func summary(t *testing.T, h Harness) outbox.Summary {
	t.Helper()
	s, err := h.Operator().Summary(context.Background())
	require.NoError(t, err)
	return s
}
