package outboxpg

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	pool, _ := newSchemaPool(t, 8)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(context.Background(), pool) })
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	var index string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT indexdef FROM pg_indexes WHERE indexname = 'sqsworker_outbox_due' AND schemaname = current_schema()`).Scan(&index))
	assert.Contains(t, index, "(next_attempt_at, seq) WHERE ((published_at IS NULL) AND (failed_at IS NULL))")
}

// A table of the first schema version: while it holds an unpublished row the migration
// is refused (that row's job is stored in the old columns); once drained, the migration
// adds the retry columns, the job column and the indexes, drops the old indexes, and a
// new entry is published.
func TestMigrateUpgradesAnOlderTable(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile("testdata/schema_v1.sql")
	require.NoError(t, err)
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h := newPostgresSuite(t) // migrated: drop the table, apply the old schema
	ctx := context.Background()
	_, err = h.pool.Exec(ctx, "DROP TABLE sqsworker_outbox")
	require.NoError(t, err)
	_, err = h.pool.Exec(ctx, string(old))
	require.NoError(t, err)
	_, err = h.pool.Exec(ctx, `INSERT INTO sqsworker_outbox (id, queue_url, body, idempotency_key) VALUES ('e-old', $1, '{}', 'e-old')`, queue.URL)
	require.NoError(t, err)

	err = Migrate(ctx, h.pool)
	require.ErrorContains(t, err, "1 entries are not published yet")
	_, err = h.pool.Exec(ctx, `UPDATE sqsworker_outbox SET published_at = now()`)
	require.NoError(t, err)
	require.NoError(t, Migrate(ctx, h.pool))
	var indexes []string
	rows, err := h.pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'sqsworker_outbox' AND schemaname = current_schema() ORDER BY indexname`)
	require.NoError(t, err)
	indexes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"sqsworker_outbox_due", "sqsworker_outbox_failed", "sqsworker_outbox_groups", "sqsworker_outbox_id_key", "sqsworker_outbox_pkey"}, indexes)
	var version string
	require.NoError(t, h.pool.QueryRow(ctx, `SELECT obj_description('sqsworker_outbox'::regclass, 'pg_class')`).Scan(&version))
	assert.Equal(t, SchemaVersion, version)

	entries := h.Commit(t, queue.URL, outboxtest.Job(1))
	outboxtest.StartRelay(t, h.relay(t, outboxtest.NewProducer(t, client), outbox.RelayConfig{PollInterval: 50 * time.Millisecond}))
	got := outboxtest.Drain(t, client, queue.URL, 1, 20*time.Second)
	assert.Equal(t, entries[0].ID, outboxtest.OutboxID(got[0]))
}

// Two relays share 10,000 entries: each entry reaches the consumer exactly once.
func TestTwoRelaysPublishTenThousandEntriesOnceEach(t *testing.T) {
	t.Parallel()
	const total, perTransaction = 10000, 100
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	h := newPostgresSuite(t)
	var entries []outbox.Entry
	for tx := range total / perTransaction {
		jobs := make([]producer.Job, perTransaction)
		for i := range jobs {
			jobs[i] = outboxtest.Job(tx*perTransaction + i)
		}
		entries = append(entries, h.Commit(t, queue.URL, jobs...)...)
	}
	p := outboxtest.NewProducer(t, client)
	relays := []*outbox.Relay{
		h.relay(t, p, outbox.RelayConfig{PollInterval: 100 * time.Millisecond, BatchSize: 50}),
		h.relay(t, p, outbox.RelayConfig{PollInterval: 100 * time.Millisecond, BatchSize: 50}),
	}
	for _, r := range relays {
		outboxtest.StartRelay(t, r)
	}
	effects := consumeConcurrently(t, client, queue.URL, total, 4, 90*time.Second)
	outboxtest.OnceEach(t, entries, effects)
	testenv.Eventually(t, 10*time.Second, "every entry removed", func() bool { return len(h.Pending(t)) == 0 })
	outboxtest.PublishedExactly(t, total, relays...)
	a, b := relays[0].Stats(), relays[1].Stats()
	assert.Positive(t, a.Published, "both relays took part")
	assert.Positive(t, b.Published, "both relays took part")
	testenv.WaitQueueEmpty(t, client, queue.URL, 15*time.Second)
}

// consumeConcurrently receives and deletes with workers goroutines until want messages
// arrived, counting deliveries per outbox id.
func consumeConcurrently(t *testing.T, client *sqs.Client, queueURL string, want, workers int, timeout time.Duration) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var mu sync.Mutex
	effects := map[string]int{}
	received := 0
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				done := received >= want
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
					MessageAttributeNames: []string{outbox.AttributeOutboxID},
				})
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(output.Messages) == 0 {
					continue
				}
				deletes := make([]sqstypes.DeleteMessageBatchRequestEntry, len(output.Messages))
				mu.Lock()
				for i, m := range output.Messages {
					effects[outboxtest.OutboxID(m)]++
					received++
					deletes[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				mu.Unlock()
				if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: deletes}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, want, received, "messages received within %s", timeout)
	return effects
}

// Two relays on one FIFO queue: SKIP LOCKED over group heads keeps every group in order.
func TestTwoRelaysKeepFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	h := newPostgresSuite(t)
	const groups, perGroup = 6, 40
	want := map[string][]string{}
	group := map[string]string{}
	for i := range perGroup {
		var jobs []producer.Job
		for g := range groups {
			job := outboxtest.Job(g*1000 + i)
			job.GroupID = "customer-" + strconv.Itoa(g)
			jobs = append(jobs, job)
		}
		for _, e := range h.Commit(t, queue.URL, jobs...) {
			want[e.GroupID] = append(want[e.GroupID], e.ID)
			group[e.ID] = e.GroupID
		}
	}
	p := outboxtest.NewProducer(t, client)
	a := h.relay(t, p, outbox.RelayConfig{PollInterval: 20 * time.Millisecond, BatchSize: 8})
	b := h.relay(t, p, outbox.RelayConfig{PollInterval: 20 * time.Millisecond, BatchSize: 8})
	outboxtest.StartRelay(t, a)
	outboxtest.StartRelay(t, b)
	got := map[string][]string{}
	for _, m := range outboxtest.Drain(t, client, queue.URL, groups*perGroup, 60*time.Second) {
		id := outboxtest.OutboxID(m)
		got[group[id]] = append(got[group[id]], id)
	}
	assert.Equal(t, want, got)
	outboxtest.PublishedExactly(t, groups*perGroup, a, b)
}
