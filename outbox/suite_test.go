package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// harness is one outbox store as the conformance tests drive it: the same guarantees are
// checked on DynamoDB (moto) and PostgreSQL (a real server).
type harness interface {
	// commit writes jobs for queueURL with a business record in one committed transaction.
	commit(t *testing.T, queueURL string, jobs ...producer.Job) []Entry
	// rollback writes jobs for queueURL in a transaction that does not commit.
	rollback(t *testing.T, queueURL string, jobs ...producer.Job)
	// relay returns a relay over the store.
	relay(t *testing.T, p *producer.Producer, config RelayConfig) *Relay
	// pending returns the ids of the unpublished entries.
	pending(t *testing.T) []string
	// failed returns the failed entries.
	failed(t *testing.T) []Entry
	// parked returns the parked groups; summary the outbox's counts.
	parked(t *testing.T) []ParkedGroup
	summary(t *testing.T) Summary
	// retry and skip act on a failed entry.
	retry(t *testing.T, id string) error
	skip(t *testing.T, id string) error
	// plantDamaged writes an unpublished entry for queueURL that cannot be decoded, and
	// returns its id.
	plantDamaged(t *testing.T, queueURL string) string
	// processEnv is the environment a relay subprocess needs to reach the same outbox.
	processEnv() []string
}

// stores runs test once per store.
func stores(t *testing.T, test func(t *testing.T, h harness)) {
	t.Run("dynamodb", func(t *testing.T) {
		t.Parallel()
		test(t, newDynamoHarness(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, newPostgresHarness(t))
	})
}

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

func TestRollbackProducesNothing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		h.rollback(t, queue.URL, webhookJob(1), webhookJob(2))
		committed := h.commit(t, queue.URL, webhookJob(3))
		assert.Equal(t, ids(committed), h.pending(t), "only the committed entry is in the outbox")

		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond})
		startRelay(t, r)
		got := drainQueue(t, client, queue.URL, 1, 20*time.Second)
		testenv.Eventually(t, 10*time.Second, "the committed entry removed", func() bool { return len(h.pending(t)) == 0 })
		// The relay has published everything it will: the only entry it could read.
		publishedExactly(t, 1, r)
		assert.Equal(t, ids(committed)[0], outboxID(got[0]))
		queueEmpty(t, client, queue.URL)
	})
}

// Crash tests run the relay as a subprocess (this test binary, see TestMain) that
// SIGKILLs itself at the crash point: after it claimed entries, or after SQS confirmed
// their send but before they are marked.
const (
	envRelayProcess = "OUTBOX_TEST_RELAY_PROCESS" // the store: dynamodb or postgres
	envCrashAt      = "OUTBOX_TEST_CRASH_AT"
	crashBanner     = "outbox relay process: crashing at "
)

func TestMain(m *testing.M) {
	if store := os.Getenv(envRelayProcess); store != "" {
		os.Exit(runRelayProcess(store, os.Getenv(envCrashAt)))
	}
	os.Exit(m.Run())
}

// runRelayProcess runs a relay that kills itself with SIGKILL at crashAt.
func runRelayProcess(store, crashAt string) int {
	ctx := context.Background()
	r, err := processRelay(ctx, store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "outbox relay process:", err)
		return 2
	}
	r.crash = func(point string) {
		if point == crashAt {
			fmt.Fprintln(os.Stdout, crashBanner+point)
			_ = os.Stdout.Sync()
			if self, err := os.FindProcess(os.Getpid()); err == nil {
				_ = self.Kill() // SIGKILL on unix
			}
			select {} // the signal ends the process
		}
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "outbox relay process:", err)
		return 1
	}
	return 0
}

// runCrashingRelay runs the relay subprocess until it killed itself at crashAt.
func runCrashingRelay(t *testing.T, h harness, crashAt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), h.processEnv()...), envCrashAt+"="+crashAt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.Error(t, err, "the relay process must die; stderr: %s", stderr.String())
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit))
	status := exit.Sys().(syscall.WaitStatus)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v; stderr: %s", err, stderr.String())
	require.Contains(t, stdout.String(), crashBanner+crashAt, "it killed itself at the crash point (not the test's timeout); stderr: %s", stderr.String())
}

func TestRelayKilledAfterClaimLosesNothing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		entries := h.commit(t, queue.URL, webhookJob(1), webhookJob(2), webhookJob(3))
		runCrashingRelay(t, h, "claimed")
		assert.ElementsMatch(t, ids(entries), h.pending(t), "nothing was published or removed")
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		assert.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight}, "nothing was sent")

		c := startConsumer(t, client, queue.URL)
		startRelay(t, h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond}))
		testenv.Eventually(t, 30*time.Second, "three messages handled", func() bool { return c.server.Stats().Deleted == 3 })
		queueEmpty(t, client, queue.URL)
		onceEach(t, entries, c.snapshot())
		assert.Empty(t, h.pending(t))
	})
}

func TestRelayKilledAfterSendIsAbsorbedByIdempotency(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		entries := h.commit(t, queue.URL, webhookJob(1), webhookJob(2), webhookJob(3))
		runCrashingRelay(t, h, "sent")
		assert.ElementsMatch(t, ids(entries), h.pending(t), "sent, but not marked")

		c := startConsumer(t, client, queue.URL)
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond})
		startRelay(t, r)
		// Six messages: each entry sent by the killed relay and again by this one.
		testenv.Eventually(t, 30*time.Second, "six messages deleted", func() bool { return c.server.Stats().Deleted == 6 })
		queueEmpty(t, client, queue.URL)
		publishedExactly(t, 3, r)
		onceEach(t, entries, c.snapshot())
		assert.Empty(t, h.pending(t))
	})
}

func TestRefusedEntriesAreMarkedFailedAndTheRelayGoesOn(t *testing.T) {
	t.Parallel()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the test sets or reads MaximumMessageSize
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(queue.URL), Attributes: map[string]string{"MaximumMessageSize": "65536"},
		})
		require.NoError(t, err)
		tooLarge := producer.Job{Type: "order-webhook", Body: strings.Repeat("x", 100*1024)} // above the queue's 64 KiB
		badAttribute := webhookJob(2)
		badAttribute.Attributes = map[string]sqstypes.MessageAttributeValue{
			"note": {DataType: aws.String("String"), StringValue: aws.String("bell \x07 is not a character SQS accepts")},
		}
		entries := h.commit(t, queue.URL, webhookJob(1), tooLarge, badAttribute, webhookJob(4))
		events := &recorder{}
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond, Observer: events})
		startRelay(t, r)
		got := drainQueue(t, client, queue.URL, 2, 20*time.Second)
		testenv.Eventually(t, 10*time.Second, "two entries published and two failed", func() bool {
			s := r.Stats()
			return s.Published == 2 && s.Failed == 2
		})
		assert.ElementsMatch(t, []string{entries[0].ID, entries[3].ID}, []string{outboxID(got[0]), outboxID(got[1])})
		assert.Empty(t, h.pending(t), "nothing left to retry")

		failed := h.failed(t)
		require.Len(t, failed, 2)
		reasons := map[string]string{}
		for _, e := range failed {
			reasons[e.ID] = e.FailureReason
			assert.False(t, e.FailedAt.IsZero())
		}
		assert.Contains(t, reasons[entries[1].ID], "MaximumMessageSize")
		assert.NotEmpty(t, reasons[entries[2].ID])
		var observed []string
		for _, ev := range events.kinds(EventFailed) {
			observed = append(observed, ev.Entry.ID)
			assert.Error(t, ev.Err)
		}
		assert.ElementsMatch(t, []string{entries[1].ID, entries[2].ID}, observed)
		queueEmpty(t, client, queue.URL)
	})
}

func TestRelayReportsBacklogAndLag(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		written := time.Now()
		h.commit(t, queue.URL, webhookJob(1), webhookJob(2), webhookJob(3), webhookJob(4), webhookJob(5))
		events := &recorder{}
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond, ReportInterval: 100 * time.Millisecond, Observer: events})
		startRelay(t, r)
		drainQueue(t, client, queue.URL, 5, 20*time.Second)
		testenv.Eventually(t, 10*time.Second, "a backlog report of 0 after the publish", func() bool {
			reports := events.kinds(EventBacklog)
			return len(reports) > 1 && reports[len(reports)-1].Backlog == 0
		})
		first := events.kinds(EventBacklog)[0]
		assert.Equal(t, 5, first.Backlog, "the first report, before the first claim, counts every entry")
		assert.Greater(t, first.Lag, time.Duration(0))
		assert.LessOrEqual(t, first.Lag, time.Since(written)+time.Second, "lag is the oldest entry's age (writer clock, ms)")
		last := events.kinds(EventBacklog)
		assert.Zero(t, last[len(last)-1].Lag)
	})
}

func TestFIFOGroupOrderKeptThroughTheRelay(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
		const groups, perGroup = 4, 15
		want := map[string][]string{}
		// One transaction per step, each group's entries written in order and interleaved.
		for i := range perGroup {
			for g := range groups {
				group := "customer-" + strconv.Itoa(g)
				job := webhookJob(g*100 + i)
				job.GroupID = group
				entries := h.commit(t, queue.URL, job)
				want[group] = append(want[group], entries[0].ID)
			}
		}
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond, BatchSize: 7, Observer: &recorder{}})
		startRelay(t, r)
		got := map[string][]string{}
		for _, m := range drainQueue(t, client, queue.URL, groups*perGroup, 30*time.Second) {
			group := ""
			for g := range groups {
				if slicesContains(want["customer-"+strconv.Itoa(g)], outboxID(m)) {
					group = "customer-" + strconv.Itoa(g)
				}
			}
			got[group] = append(got[group], outboxID(m))
		}
		assert.Equal(t, want, got, "every group in commit order")
	})
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
