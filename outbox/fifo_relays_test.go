package outbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// sendLog wraps the SQS client of relays: it records every entry of every
// SendMessageBatch (outbox id → deduplication ids, one per send), and holds the calls
// that carry the entry hold names until release is closed.
type sendLog struct {
	*sqs.Client
	hold    string
	held    chan struct{} // closed when a held call arrived
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	sends map[string][]string
}

func newSendLog(client *sqs.Client, hold string) *sendLog {
	return &sendLog{Client: client, hold: hold, held: make(chan struct{}), release: make(chan struct{}), sends: map[string][]string{}}
}

func (l *sendLog) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	holdThis := false
	l.mu.Lock()
	for _, e := range in.Entries {
		id := aws.ToString(e.MessageAttributes[AttributeOutboxID].StringValue)
		l.sends[id] = append(l.sends[id], aws.ToString(e.MessageDeduplicationId))
		holdThis = holdThis || id == l.hold
	}
	l.mu.Unlock()
	if holdThis {
		l.once.Do(func() { close(l.held) })
		select {
		case <-l.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return l.Client.SendMessageBatch(ctx, in, opts...)
}

func (l *sendLog) snapshot() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for k, v := range l.sends {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// byGroup returns the outbox ids of messages, by message group, in receive order.
func byGroup(messages []Message) map[string][]string {
	out := map[string][]string{}
	for _, m := range messages {
		out[m.group] = append(out[m.group], m.id)
	}
	return out
}

// Message is a received message: its outbox id and group.
type Message struct{ id, group string }

func receiveGroups(t *testing.T, client *sqs.Client, queueURL string, want int, timeout time.Duration) []Message {
	t.Helper()
	var out []Message
	for _, m := range drainQueue(t, client, queueURL, want, timeout) {
		out = append(out, Message{id: outboxID(m), group: m.Attributes["MessageGroupId"]})
	}
	return out
}

// Two relays on one FIFO queue; R1's send of g1 is held for 5 s. While it is held, R2
// publishes the other group (h1, h2, h3) and nothing of g's group; once released, the
// group arrives as g1, g2, g3. Each entry is sent once, with its id as the
// deduplication id. (CASES.md N13, main run.)
func TestHeldGroupHeadStopsOnlyItsGroup(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
		var g []Entry
		for i := range 3 {
			g = append(g, h.commit(t, queue.URL, groupJob("G", i))...)
		}
		log := newSendLog(client, g[0].ID)
		config := RelayConfig{PollInterval: 50 * time.Millisecond, BatchSize: 10, ClaimLease: 10 * time.Second}
		startRelay(t, h.relay(t, newTestProducer(t, log), config))
		testenv.Recv(t, log.held, 20*time.Second, "R1's send of g1")
		var hs []Entry
		for i := range 3 {
			hs = append(hs, h.commit(t, queue.URL, groupJob("H", i))...)
		}
		startRelay(t, h.relay(t, newTestProducer(t, log), config))
		heldFor := time.AfterFunc(5*time.Second, func() { close(log.release) })
		defer heldFor.Stop()
		while := receiveGroups(t, client, queue.URL, 3, 20*time.Second)
		select {
		case <-log.release:
			t.Fatal("H was not published while g1 was held")
		default:
		}
		assert.Equal(t, map[string][]string{"H": ids(hs)}, byGroup(while), "while g1 is held: H only")
		after := receiveGroups(t, client, queue.URL, 3, 30*time.Second)
		assert.Equal(t, map[string][]string{"G": ids(g)}, byGroup(after), "then G in order")
		want := map[string][]string{}
		for _, e := range append(g, hs...) {
			want[e.ID] = []string{e.ID}
		}
		assert.Equal(t, want, log.snapshot(), "each entry sent once, its id as the deduplication id")
		queueEmpty(t, client, queue.URL)
	})
}

// R1 is SIGKILLed while its send of g1 is in flight, after SQS took it (the fault proxy
// forwards the call and holds the answer). R2 claims g1 once R1's claim ends (its
// connection on PostgreSQL, the lease on DynamoDB) and sends it again with the same
// deduplication id: SQS drops the copy, and the consumer receives g1 once, then g2, g3.
// (CASES.md N13, variant B.)
func TestRelayKilledMidSendResendsWithTheSameDeduplicationID(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
		var g []Entry
		for i := range 3 {
			g = append(g, h.commit(t, queue.URL, groupJob("G", i))...)
		}
		proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
		hold := make(chan struct{})
		proxy.SetRules(faultproxy.Rule{Operations: []string{"SendMessageBatch"}, Fraction: 1, Times: 1, Reset: true, Hold: hold})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), h.processEnv()...), "AWS_ENDPOINT_URL_SQS="+proxy.URL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		testenv.Eventually(t, 30*time.Second, "g1 in the queue, sent by R1", func() bool {
			return testenv.QueueAttributes(t, client, queue.URL)["ApproximateNumberOfMessages"] == "1"
		})
		require.NoError(t, cmd.Process.Kill())
		err := cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "R1 killed: %v; stderr: %s", err, stderr.String())
		close(hold)

		log := newSendLog(client, "")
		startRelay(t, h.relay(t, newTestProducer(t, log), RelayConfig{PollInterval: 50 * time.Millisecond, BatchSize: 10}))
		got := receiveGroups(t, client, queue.URL, 3, 30*time.Second)
		assert.Equal(t, map[string][]string{"G": ids(g)}, byGroup(got), "g1 once, then g2, g3")
		testenv.Eventually(t, 10*time.Second, "G published", func() bool { return len(h.pending(t)) == 0 })
		sends := log.snapshot()
		assert.Equal(t, []string{g[0].ID}, sends[g[0].ID], "R2 sends g1 again with the same deduplication id")
		for _, e := range g {
			for _, dedup := range sends[e.ID] {
				assert.Equal(t, e.ID, dedup)
			}
		}
		queueEmpty(t, client, queue.URL)
	})
}

// g2 is larger than the queue takes (no claim check): it is marked failed with the
// reason, g3 waits and the group is reported parked; the other group goes on. Skipping
// g2 releases the group and g3 goes out. (CASES.md N13, variant C.)
func TestRefusedGroupEntryParksItsGroupUntilSkipped(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		// 256 KiB, set on LocalStack; ElasticMQ returns no MaximumMessageSize, and the
		// producer then assumes SQS's former default, 256 KiB, too.
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, MaximumMessageSize: 256 * 1024})
		g1 := h.commit(t, queue.URL, groupJob("G", 1))
		big := groupJob("G", 2)
		big.Payload, big.Body = nil, strings.Repeat("x", 300*1024)
		g2 := h.commit(t, queue.URL, big)
		g3 := h.commit(t, queue.URL, groupJob("G", 3))
		hs := h.commit(t, queue.URL, groupJob("H", 1), groupJob("H", 2), groupJob("H", 3))
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond, ReportInterval: 50 * time.Millisecond, Observer: &recorder{}})
		startRelay(t, r)
		got := receiveGroups(t, client, queue.URL, 4, 30*time.Second)
		assert.Equal(t, map[string][]string{"G": ids(g1), "H": ids(hs)}, byGroup(got))
		testenv.Eventually(t, 10*time.Second, "g2 failed", func() bool { return r.Stats().Failed == 1 })
		failed := h.failed(t)
		require.Len(t, failed, 1)
		assert.Equal(t, g2[0].ID, failed[0].ID)
		assert.True(t, strings.HasPrefix(failed[0].FailureReason, "outbox: entry refused by SQS: message too large"), failed[0].FailureReason)
		assert.Equal(t, ids(g3), h.pending(t), "g3 waits")
		parked := h.parked(t)
		require.Len(t, parked, 1)
		assert.Equal(t, "G", parked[0].GroupID)
		assert.Equal(t, g2[0].ID, parked[0].Entry.ID)
		assert.Equal(t, failed[0].FailureReason, parked[0].Entry.FailureReason)
		assert.Equal(t, 1, parked[0].Waiting)
		s := h.summary(t)
		assert.Equal(t, 1, s.Unpublished)
		assert.Equal(t, 1, s.Failed)
		assert.Equal(t, 1, s.ParkedGroups)

		require.NoError(t, h.skip(t, g2[0].ID))
		require.ErrorIs(t, h.skip(t, g2[0].ID), ErrNotFailed)
		require.ErrorIs(t, h.retry(t, g3[0].ID), ErrNotFailed, "g3 is not failed")
		got = receiveGroups(t, client, queue.URL, 1, 30*time.Second)
		assert.Equal(t, map[string][]string{"G": ids(g3)}, byGroup(got))
		testenv.Eventually(t, 10*time.Second, "nothing left", func() bool { return h.summary(t) == Summary{} })
		queueEmpty(t, client, queue.URL)
	})
}
