package outboxtest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// Four groups of fifteen entries, one transaction each, interleaved: each group arrives
// in commit order through a relay that claims seven at a time.
func testFIFOGroupOrderKept(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	const groups, perGroup = 4, 15
	want := map[string][]string{}
	for i := range perGroup {
		for g := range groups {
			group := "customer-" + strconv.Itoa(g)
			entries := h.Commit(t, queue.URL, GroupJob(group, g*100+i))
			want[group] = append(want[group], entries[0].ID)
		}
	}
	config := fast
	config.BatchSize = 7
	StartRelay(t, newRelay(t, h, NewProducer(t, client), config))
	got := byGroup(Drain(t, client, queue.URL, groups*perGroup, 30*time.Second))
	assert.Equal(t, want, got, "every group in commit order")
}

// The outbox carries the options the producer knows: on a FIFO queue a UniqueKey (and a
// DeduplicationID) is the deduplication id, so of two entries with one key SQS delivers
// the first; every entry is published.
func testUniqueKeysAndDeduplicationIDs(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	entries := h.Commit(t, queue.URL,
		producer.Job{Type: "order", Body: "first", GroupID: "g", UniqueKey: "order-7"},
		producer.Job{Type: "order", Body: "again", GroupID: "g", UniqueKey: "order-7"},
		producer.Job{Type: "order", Body: "own", GroupID: "g", DeduplicationID: "own-1"},
	)
	assert.Equal(t, "order-7", entries[0].Job.DeduplicationID)
	assert.Equal(t, "own-1", entries[2].Job.DeduplicationID)
	r := newRelay(t, h, NewProducer(t, client), fast)
	StartRelay(t, r)
	testenv.Eventually(t, 20*time.Second, "all three entries published", func() bool { return r.Stats().Published == 3 })
	got := DrainIDs(t, client, queue.URL, 2, 20*time.Second)
	assert.Equal(t, []string{entries[0].ID, entries[2].ID}, got, "the repeat of the key is not delivered")
	queueEmpty(t, client, queue.URL)
}

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
		id := aws.ToString(e.MessageAttributes[outbox.AttributeOutboxID].StringValue)
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
		out[k] = slices.Clone(v)
	}
	return out
}

// Two relays on one FIFO queue; R1's send of g1 is held for 5 s. While it is held, R2
// publishes the other group (h1, h2, h3) and nothing of g's group; once released, the
// group arrives as g1, g2, g3. Each entry is sent once, with its id as the
// deduplication id.
func testHeldGroupHeadStopsOnlyItsGroup(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	var g []outbox.Entry
	for i := range 3 {
		g = append(g, h.Commit(t, queue.URL, GroupJob("G", i))...)
	}
	log := newSendLog(client, g[0].ID)
	config := fast
	config.BatchSize = 10
	StartRelay(t, newRelay(t, h, NewProducer(t, log), config))
	testenv.Recv(t, log.held, 20*time.Second, "R1's send of g1")
	var hs []outbox.Entry
	for i := range 3 {
		hs = append(hs, h.Commit(t, queue.URL, GroupJob("H", i))...)
	}
	StartRelay(t, newRelay(t, h, NewProducer(t, log), config))
	heldFor := time.AfterFunc(5*time.Second, func() { close(log.release) })
	defer heldFor.Stop()
	while := Drain(t, client, queue.URL, 3, 20*time.Second)
	select {
	case <-log.release:
		t.Fatal("H was not published while g1 was held")
	default:
	}
	assert.Equal(t, map[string][]string{"H": IDs(hs)}, byGroup(while), "while g1 is held: H only")
	after := Drain(t, client, queue.URL, 3, 30*time.Second)
	assert.Equal(t, map[string][]string{"G": IDs(g)}, byGroup(after), "then G in order")
	want := map[string][]string{}
	for _, e := range append(g, hs...) {
		want[e.ID] = []string{e.ID}
	}
	assert.Equal(t, want, log.snapshot(), "each entry sent once, its id as the deduplication id")
	queueEmpty(t, client, queue.URL)
}

// R1 claims a group's three entries and dies once SQS took its send of g1 (the first).
// R2 claims g1 once R1's claims end and sends it again with the same deduplication id:
// SQS drops the copy, and the group arrives once, in order.
func testCrashMidGroup(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	var g []outbox.Entry
	for i := range 3 {
		g = append(g, h.Commit(t, queue.URL, GroupJob("G", i))...)
	}
	crashed, c := claim(t, h, crashLease, 10)
	require.Equal(t, IDs(g), claimedIDs(c), "the group, in order")
	sendClaimed(t, NewProducer(t, client), c.Entries()[:1])
	h.Crash(t, crashed)

	log := newSendLog(client, "")
	config := fast
	config.BatchSize = 10
	StartRelay(t, newRelay(t, h, NewProducer(t, log), config))
	got := Drain(t, client, queue.URL, 3, 30*time.Second)
	assert.Equal(t, map[string][]string{"G": IDs(g)}, byGroup(got), "g1 once, then g2, g3")
	testenv.Eventually(t, 10*time.Second, "G published", func() bool { return len(h.Pending(t)) == 0 })
	sends := log.snapshot()
	assert.Equal(t, []string{g[0].ID}, sends[g[0].ID], "R2 sends g1 again with the same deduplication id")
	for _, e := range g {
		for _, dedup := range sends[e.ID] {
			assert.Equal(t, e.ID, dedup)
		}
	}
	queueEmpty(t, client, queue.URL)
}

// g2 is larger than the queue takes (no claim check): it is marked failed with the
// reason, g3 waits and the group is reported parked; the other group goes on. Skipping
// g2 releases the group and g3 goes out.
func testRefusedGroupEntryParksItsGroup(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	// 256 KiB, set on LocalStack; ElasticMQ returns no MaximumMessageSize, and the
	// producer then assumes SQS's former default, 256 KiB, too.
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, MaximumMessageSize: 256 * 1024})
	g1 := h.Commit(t, queue.URL, GroupJob("G", 1))
	big := GroupJob("G", 2)
	big.Payload, big.Body = nil, strings.Repeat("x", 300*1024)
	g2 := h.Commit(t, queue.URL, big)
	g3 := h.Commit(t, queue.URL, GroupJob("G", 3))
	hs := h.Commit(t, queue.URL, GroupJob("H", 1), GroupJob("H", 2), GroupJob("H", 3))
	config := fast
	config.ReportInterval = 50 * time.Millisecond
	r := newRelay(t, h, NewProducer(t, client), config)
	StartRelay(t, r)
	got := Drain(t, client, queue.URL, 4, 30*time.Second)
	assert.Equal(t, map[string][]string{"G": IDs(g1), "H": IDs(hs)}, byGroup(got))
	testenv.Eventually(t, 10*time.Second, "g2 failed", func() bool { return r.Stats().Failed == 1 })
	failed := failed(t, h)
	require.Len(t, failed, 1)
	assert.Equal(t, g2[0].ID, failed[0].ID)
	assert.True(t, strings.HasPrefix(failed[0].FailureReason, "outbox: entry refused by SQS: message too large"), failed[0].FailureReason)
	assert.Equal(t, IDs(g3), h.Pending(t), "g3 waits")
	parked := parked(t, h)
	require.Len(t, parked, 1)
	assert.Equal(t, "G", parked[0].GroupID)
	assert.Equal(t, g2[0].ID, parked[0].Entry.ID)
	assert.Equal(t, failed[0].FailureReason, parked[0].Entry.FailureReason)
	assert.Equal(t, 1, parked[0].Waiting)
	s := summary(t, h)
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{s.Unpublished, s.Failed, s.ParkedGroups}, "unpublished, failed, parked groups")

	require.NoError(t, h.Operator().Skip(context.Background(), g2[0].ID))
	require.ErrorIs(t, h.Operator().Skip(context.Background(), g2[0].ID), outbox.ErrNotFailed)
	require.ErrorIs(t, h.Operator().Retry(context.Background(), g3[0].ID), outbox.ErrNotFailed, "g3 is not failed")
	got = Drain(t, client, queue.URL, 1, 30*time.Second)
	assert.Equal(t, map[string][]string{"G": IDs(g3)}, byGroup(got))
	testenv.Eventually(t, 10*time.Second, "nothing left", func() bool { return summary(t, h) == outbox.Summary{} })
	queueEmpty(t, client, queue.URL)
}
