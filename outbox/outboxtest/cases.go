package outboxtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// fast is the relay configuration of most cases: an idle relay looks again after 50 ms.
var fast = outbox.RelayConfig{PollInterval: 50 * time.Millisecond}

// A rolled-back transaction leaves no entry; the committed one is published once and
// removed.
func testRollbackProducesNothing(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h.Rollback(t, queue.URL, Job(1), Job(2))
	committed := h.Commit(t, queue.URL, Job(3))
	assert.Equal(t, IDs(committed), h.Pending(t), "only the committed entry is in the outbox")

	r := newRelay(t, h, NewProducer(t, client), fast)
	StartRelay(t, r)
	got := DrainIDs(t, client, queue.URL, 1, 20*time.Second)
	testenv.Eventually(t, 10*time.Second, "the committed entry removed", func() bool { return len(h.Pending(t)) == 0 })
	PublishedExactly(t, 1, r) // the only entry it could read
	assert.Equal(t, IDs(committed), got)
	queueEmpty(t, client, queue.URL)
}

// A relay that dies after its claim, before its send: nothing was sent or removed, and
// the next relay publishes every entry once, as soon as the dead one's claims end.
func testCrashAfterClaimLosesNothing(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	entries := h.Commit(t, queue.URL, Job(1), Job(2), Job(3))
	crashed, c := claim(t, h, crashLease, 10)
	require.ElementsMatch(t, IDs(entries), claimedIDs(c))
	h.Crash(t, crashed)
	assert.ElementsMatch(t, IDs(entries), h.Pending(t), "nothing was published or removed")

	consumer := StartConsumer(t, client, queue.URL)
	StartRelay(t, newRelay(t, h, NewProducer(t, client), fast))
	testenv.Eventually(t, 30*time.Second, "three messages handled", func() bool { return consumer.Deleted() == 3 })
	queueEmpty(t, client, queue.URL)
	OnceEach(t, entries, consumer.Effects())
	assert.Empty(t, h.Pending(t))
}

// A relay that dies after SQS took its sends, before it settled them: the next relay
// sends every entry again with the same idempotency key, and the consumer's idempotency
// absorbs the repeats.
func testCrashAfterSendIsAbsorbedByIdempotency(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	entries := h.Commit(t, queue.URL, Job(1), Job(2), Job(3))
	crashed, c := claim(t, h, crashLease, 10)
	require.ElementsMatch(t, IDs(entries), claimedIDs(c))
	sendClaimed(t, NewProducer(t, client), c.Entries())
	h.Crash(t, crashed)
	assert.ElementsMatch(t, IDs(entries), h.Pending(t), "sent, but not settled")

	consumer := StartConsumer(t, client, queue.URL)
	r := newRelay(t, h, NewProducer(t, client), fast)
	StartRelay(t, r)
	// Six messages: each entry sent by the dead relay and again by this one.
	testenv.Eventually(t, 30*time.Second, "six messages deleted", func() bool { return consumer.Deleted() == 6 })
	queueEmpty(t, client, queue.URL)
	PublishedExactly(t, 3, r)
	OnceEach(t, entries, consumer.Effects())
	assert.Empty(t, h.Pending(t))
}

// sendClaimed sends the claimed entries' jobs, as a relay does, and requires SQS to
// take them all.
func sendClaimed(t *testing.T, p *producer.Producer, claimed []outbox.Claimed) {
	t.Helper()
	jobs := make([]producer.Prepared, len(claimed))
	for i, e := range claimed {
		jobs[i] = e.Job
	}
	results, err := p.SendPreparedBatch(context.Background(), jobs)
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err)
	}
}

// Entries SQS or the producer refuses (too large for the queue, an attribute SQS does
// not accept) are marked failed with their reasons, reported as EventFailed, and the
// relay publishes the others.
func testRefusedEntriesAreFailed(t *testing.T, h Harness) {
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the queue's MaximumMessageSize
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaximumMessageSize: 64 * 1024})
	tooLarge := producer.Job{Type: JobType, Body: strings.Repeat("x", 100*1024)}
	badAttribute := Job(2)
	badAttribute.Attributes = map[string]sqstypes.MessageAttributeValue{
		"note": {DataType: aws.String("String"), StringValue: aws.String("bell \x07 is not a character SQS accepts")},
	}
	entries := h.Commit(t, queue.URL, Job(1), tooLarge, badAttribute, Job(4))
	events := &Recorder{}
	config := fast
	config.Observer = events
	r := newRelay(t, h, NewProducer(t, client), config)
	StartRelay(t, r)
	got := DrainIDs(t, client, queue.URL, 2, 20*time.Second)
	testenv.Eventually(t, 10*time.Second, "two entries published and two failed", func() bool {
		s := r.Stats()
		return s.Published == 2 && s.Failed == 2
	})
	assert.ElementsMatch(t, []string{entries[0].ID, entries[3].ID}, got)
	assert.Empty(t, h.Pending(t), "nothing left to retry")

	failed := failed(t, h)
	require.Len(t, failed, 2)
	reasons := map[string]string{}
	for _, e := range failed {
		reasons[e.ID] = e.FailureReason
		assert.False(t, e.FailedAt.IsZero())
	}
	assert.Contains(t, reasons[entries[1].ID], "MaximumMessageSize")
	assert.True(t, strings.HasPrefix(reasons[entries[2].ID], "outbox: entry refused by SQS"), reasons[entries[2].ID])
	var observed []string
	for _, ev := range events.Kinds(outbox.EventFailed) {
		observed = append(observed, ev.Entry.ID)
		assert.ErrorIs(t, ev.Err, outbox.ErrRefused)
	}
	assert.ElementsMatch(t, []string{entries[1].ID, entries[2].ID}, observed)
	queueEmpty(t, client, queue.URL)
}

// An entry that cannot be decoded, ahead of good ones, is claimed with its damage,
// marked failed with the reason (no store error), and the relay goes on with the rest.
func testDamagedEntryIsFailedApart(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	damaged := h.PlantDamaged(t, queue.URL)
	good := h.Commit(t, queue.URL, Job(1), Job(2))
	events := &Recorder{}
	config := fast
	config.Observer = events
	r := newRelay(t, h, NewProducer(t, client), config)
	StartRelay(t, r)
	got := DrainIDs(t, client, queue.URL, 2, 20*time.Second)
	require.ElementsMatch(t, IDs(good), got)
	testenv.Eventually(t, 10*time.Second, "the damaged entry failed", func() bool { return r.Stats().Failed == 1 })
	failed := failed(t, h)
	require.Len(t, failed, 1)
	assert.Equal(t, damaged, failed[0].ID)
	assert.True(t, strings.HasPrefix(failed[0].FailureReason, "outbox: entry cannot be decoded: "), failed[0].FailureReason)
	require.Len(t, events.Kinds(outbox.EventFailed), 1)
	assert.ErrorIs(t, events.Kinds(outbox.EventFailed)[0].Err, outbox.ErrDamaged)
	assert.Zero(t, r.Stats().StoreErrors)
	assert.Equal(t, outbox.Summary{Failed: 1}, summary(t, h))
	queueEmpty(t, client, queue.URL)
}

// fastRetries retries after 200 ms, 3 attempts in all.
var fastRetries = outbox.RelayConfig{
	PollInterval: 50 * time.Millisecond, MaxAttempts: 3,
	Backoff: sqsworker.Backoff{Base: 200 * time.Millisecond, Cap: 200 * time.Millisecond, Jitter: sqsworker.JitterNone},
}

// 100 entries for a queue that does not exist, committed before 5 entries for a good
// queue: the good ones go out at once (an entry waiting for its next attempt does not
// hold back the entries due now); the broken ones are tried 3 times, 200 ms apart (each
// retry reported with its attempt count), then marked failed with their last error.
func testBrokenDestinationIsRetriedThenFailed(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	missing := queue.URL + "-missing"
	broken := make([]producer.Job, 100)
	for i := range broken {
		broken[i] = Job(i)
	}
	h.Commit(t, missing, broken[:50]...) // a DynamoDB transaction takes at most 100 items
	h.Commit(t, missing, broken[50:]...)
	good := h.Commit(t, queue.URL, Job(1001), Job(1002), Job(1003), Job(1004), Job(1005))
	events := &Recorder{}
	config := fastRetries
	config.Observer = events
	r := newRelay(t, h, NewProducer(t, client), config)
	// The first cycle claims and fails the 100 broken entries (a store on an emulator
	// that serves one request at a time may take a few hundred round trips); the second
	// sends the 5.
	wait := 30*time.Second + 100*slowestSummary(t, h)
	started := time.Now()
	StartRelay(t, r)
	require.ElementsMatch(t, IDs(good), DrainIDs(t, client, queue.URL, 5, wait))
	twoCycles := time.Since(started)

	// Two more attempts of the 100, each a cycle about as costly as the first; the bound
	// only catches a relay that stopped.
	testenv.Eventually(t, 3*time.Minute+3*twoCycles, "100 entries failed", func() bool { return r.Stats().Failed == 100 })
	failed := failed(t, h)
	require.Len(t, failed, 100)
	for _, e := range failed {
		assert.Equal(t, missing, e.QueueURL)
		assert.Equal(t, 3, e.Attempts)
		assert.True(t, strings.HasPrefix(e.FailureReason, "outbox: entry not sent after its last attempt (attempt 3 of 3): "), e.FailureReason)
		assert.Regexp(t, `NonExistentQueue|QueueDoesNotExist`, e.FailureReason)
	}
	retries := map[string][]int{}
	for _, ev := range events.Kinds(outbox.EventRetry) {
		retries[ev.Entry.ID] = append(retries[ev.Entry.ID], ev.Entry.Attempts)
		assert.False(t, ev.Entry.NextAttemptAt.IsZero())
	}
	require.Len(t, retries, 100)
	for id, attempts := range retries {
		assert.Equal(t, []int{1, 2}, attempts, id)
	}
	stats := r.Stats()
	stats.Cycles, stats.StoreErrors = 0, 0
	assert.Equal(t, outbox.RelayStats{Published: 5, Failed: 100, Retried: 200}, stats)
	assert.Empty(t, h.Pending(t))
	assert.Equal(t, outbox.Summary{Failed: 100}, summary(t, h))
}

// slowestSummary times three Summary calls of h (an emulator that serves one request at
// a time can be slow on a busy machine) and returns the slowest.
func slowestSummary(t *testing.T, h Harness) time.Duration {
	t.Helper()
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		summary(t, h)
		slowest = max(slowest, time.Since(begin))
	}
	return slowest
}

// A failed entry, retried, is due at once with no attempts counted and is sent; Retry
// and Skip of an entry that is not failed return ErrNotFailed.
func testRetriedEntryIsSentAgain(t *testing.T, h Harness) {
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the queue's MaximumMessageSize
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaximumMessageSize: 64 * 1024})
	entries := h.Commit(t, queue.URL, producer.Job{Type: JobType, Body: strings.Repeat("x", 100*1024)})
	r := newRelay(t, h, NewProducer(t, client), fast)
	StartRelay(t, r)
	testenv.Eventually(t, 20*time.Second, "the entry failed", func() bool { return r.Stats().Failed == 1 })
	require.Equal(t, IDs(entries), IDs(failed(t, h)))
	assert.Equal(t, 1, failed(t, h)[0].Attempts)

	_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(queue.URL), Attributes: map[string]string{"MaximumMessageSize": "262144"},
	})
	require.NoError(t, err)
	// A new relay: the first one's producer remembers the queue's former limit.
	require.NoError(t, r.Shutdown(context.Background()))
	require.NoError(t, h.Operator().Retry(context.Background(), entries[0].ID))
	assert.ErrorIs(t, h.Operator().Retry(context.Background(), entries[0].ID), outbox.ErrNotFailed, "no longer failed")
	assert.ErrorIs(t, h.Operator().Skip(context.Background(), entries[0].ID), outbox.ErrNotFailed)
	assert.Equal(t, IDs(entries), h.Pending(t))
	again := newRelay(t, h, NewProducer(t, client), fast)
	StartRelay(t, again)
	assert.Equal(t, IDs(entries), DrainIDs(t, client, queue.URL, 1, 20*time.Second))
	PublishedExactly(t, 1, again)
	assert.Empty(t, failed(t, h))
	assert.Equal(t, outbox.Summary{}, summary(t, h))
}

// The relay reports the backlog and the age of its oldest entry before its first claim,
// and 0 once it published everything.
func testBacklogAndLag(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	written := time.Now()
	h.Commit(t, queue.URL, Job(1), Job(2), Job(3), Job(4), Job(5))
	events := &Recorder{}
	config := fast
	config.ReportInterval, config.Observer = 100*time.Millisecond, events
	StartRelay(t, newRelay(t, h, NewProducer(t, client), config))
	Drain(t, client, queue.URL, 5, 20*time.Second)
	testenv.Eventually(t, 10*time.Second, "a backlog report of 0 after the publish", func() bool {
		reports := events.Kinds(outbox.EventBacklog)
		return len(reports) > 1 && reports[len(reports)-1].Backlog == 0
	})
	first := events.Kinds(outbox.EventBacklog)[0]
	assert.Equal(t, 5, first.Backlog, "the first report, before the first claim, counts every entry")
	assert.Greater(t, first.Lag, time.Duration(0))
	assert.LessOrEqual(t, first.Lag, time.Since(written)+time.Second, "lag is the oldest entry's age")
	last := events.Kinds(outbox.EventBacklog)
	assert.Zero(t, last[len(last)-1].Lag)
}

// Claims at the store: entries come in publish order (creation order); a claimed entry
// is taken by no other store until settled; an entry waiting for its next attempt is
// not due, and does not hold back the others; MinAge leaves young entries alone; a held
// entry is due again at once.
func testDueOrder(t *testing.T, h Harness) {
	ctx := context.Background()
	queue := "https://sqs.example/000000000000/due-order"
	var entries []outbox.Entry
	for i := range 3 {
		entries = append(entries, h.Commit(t, queue, Job(i))...)
	}
	young := h.Store(t, lease)
	defer young.Close()
	none, err := young.Claim(ctx, 10, time.Hour)
	require.NoError(t, err)
	assert.Empty(t, none.Entries(), "every entry is younger than MinAge")
	none.Release(ctx)

	_, c := claim(t, h, lease, 10)
	require.Equal(t, IDs(entries), claimedIDs(c), "in creation order")
	_, other := claim(t, h, lease, 10)
	assert.Empty(t, other.Entries(), "claimed entries have one holder")
	other.Release(ctx)

	now := time.Now()
	cause := errors.New("connection reset")
	require.NoError(t, c.Settle(ctx, []outbox.Verdict{
		{ID: entries[0].ID, Kind: outbox.VerdictRetry, Attempts: 1, Delay: time.Hour, Next: now.Add(time.Hour), Err: cause},
		{ID: entries[1].ID, Kind: outbox.VerdictPublished},
		{ID: entries[2].ID, Kind: outbox.VerdictHeld, Err: cause},
	}))
	assert.ElementsMatch(t, []string{entries[0].ID, entries[2].ID}, h.Pending(t))
	_, again := claim(t, h, lease, 10)
	require.Equal(t, []string{entries[2].ID}, claimedIDs(again), "the held entry is due; the retried one waits")
	require.NoError(t, again.Settle(ctx, []outbox.Verdict{{ID: entries[2].ID, Kind: outbox.VerdictPublished}}))
	assert.Equal(t, []string{entries[0].ID}, h.Pending(t))
	s := summary(t, h)
	assert.Equal(t, 1, s.Unpublished)
	assert.Zero(t, s.Failed)
}
