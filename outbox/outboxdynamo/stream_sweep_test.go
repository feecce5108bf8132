package outboxdynamo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo/dynamostream"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

// Ten entries in one shard, the fifth larger than the queue takes (no claim check), and
// a damaged one: the handler publishes the other nine once each, marks the fifth and the
// damaged one failed with their reasons, and reports no record, so nothing behind them
// waits.
func TestStreamHandlerFailsAPermanentlyBadEntryWithoutStallingTheShard(t *testing.T) {
	t.Parallel()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the queue's MaximumMessageSize makes e5 too large
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaximumMessageSize: 64 * 1024})
	h := newDynamoSuite(t)
	var entries []outbox.Entry
	for i := range 10 {
		job := outboxtest.Job(i + 1)
		if i == 4 {
			job = producer.Job{Type: "order-webhook", Body: strings.Repeat("x", 100*1024)}
		}
		entries = append(entries, h.Commit(t, queue.URL, job)...)
	}
	damaged := h.PlantDamaged(t, queue.URL)
	event := streamEvent(t, h.outbox.Table(), 11)

	observed := &outboxtest.Recorder{}
	handler, err := dynamostream.New(h.client, h.outbox, outboxtest.NewProducer(t, client), observed)
	require.NoError(t, err)
	response, err := handler.Handle(context.Background(), event)
	require.NoError(t, err)
	assert.Empty(t, response.BatchItemFailures, "the bad entries are processed: marked failed")
	good := append(append([]outbox.Entry(nil), entries[:4]...), entries[5:]...)
	got := outboxtest.Drain(t, client, queue.URL, 9, 20*time.Second)
	var published []string
	for _, m := range got {
		published = append(published, outboxtest.OutboxID(m))
	}
	assert.ElementsMatch(t, outboxtest.IDs(good), published)
	reasons := map[string]string{}
	failed, err := h.outbox.Failed(context.Background(), h.client, 100)
	require.NoError(t, err)
	for _, e := range failed {
		reasons[e.ID] = e.FailureReason
	}
	require.Len(t, reasons, 2)
	assert.True(t, strings.HasPrefix(reasons[entries[4].ID], "outbox: entry refused by SQS: message too large"), reasons[entries[4].ID])
	assert.True(t, strings.HasPrefix(reasons[damaged], "outbox: entry cannot be decoded"), reasons[damaged])
	assert.Empty(t, h.Pending(t))
	var failedEvents []string
	for _, ev := range observed.Kinds(outbox.EventFailed) {
		failedEvents = append(failedEvents, ev.Entry.ID)
	}
	assert.ElementsMatch(t, []string{entries[4].ID, damaged}, failedEvents)
	testenv.WaitQueueEmpty(t, client, queue.URL, 15*time.Second)
}

// Entries written while the stream's mapping is off are published by the container
// relay sweeping behind it (MinAge: only entries at least that old), and the stream's
// later copies are absorbed by the consumer's idempotency: one effect each. (The outage is
// shortened to the sweep's MinAge.)
func TestSweeperPublishesWhatTheStreamMissed(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h := newDynamoSuite(t)
	var entries []outbox.Entry
	for i := range 10 {
		entries = append(entries, h.Commit(t, queue.URL, outboxtest.Job(11+i))...)
	}
	c := outboxtest.StartConsumer(t, client, queue.URL)
	const minAge = 2 * time.Second
	observed := &outboxtest.Recorder{}
	r := relay(t, h, outboxtest.NewProducer(t, client), outbox.RelayConfig{PollInterval: 100 * time.Millisecond, ReportInterval: 100 * time.Millisecond, MinAge: minAge, Observer: observed})
	outboxtest.StartRelay(t, r)
	testenv.Eventually(t, 30*time.Second, "ten entries swept", func() bool { return r.Stats().Published == 10 })
	for _, ev := range observed.Kinds(outbox.EventPublished) {
		assert.GreaterOrEqual(t, ev.Time.Sub(ev.Entry.CreatedAt), minAge, "the sweeper waits for MinAge")
	}
	reports := observed.Kinds(outbox.EventBacklog)
	require.NotEmpty(t, reports)
	assert.Equal(t, 10, reports[0].Backlog)
	assert.Positive(t, reports[0].Lag, "the oldest unpublished entry's age")

	// The mapping comes back and delivers the same records.
	event := streamEvent(t, h.outbox.Table(), 10)
	var inserts []events.DynamoDBEventRecord
	for _, record := range event.Records {
		if record.EventName == string(events.DynamoDBOperationTypeInsert) {
			inserts = append(inserts, record)
		}
	}
	handler, err := dynamostream.New(h.client, h.outbox, outboxtest.NewProducer(t, client), nil)
	require.NoError(t, err)
	response, err := handler.Handle(context.Background(), events.DynamoDBEvent{Records: inserts})
	require.NoError(t, err)
	assert.Empty(t, response.BatchItemFailures)
	testenv.Eventually(t, 30*time.Second, "twenty messages handled", func() bool { return c.Deleted() == 20 })
	outboxtest.OnceEach(t, entries, c.Effects())
}
