package batches_test

// What a batch costs in DynamoDB calls, counted through a wrapper of the client, and
// how its shards spread the end writes of a large batch.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// TestEmulatorCostPerJob: a batch of 100 jobs added in one call, all succeeding through
// the poller: each job's end is exactly one TransactWriteItems of two items (its marker
// and its shard) and one GetItem; the batch adds the open's transaction, Add's (its
// shard's raise and a check that the batch is not sealed), Seal's UpdateItem, the full
// check's reads and one UpdateItem (the fired mark).
func TestEmulatorCostPerJob(t *testing.T) {
	t.Parallel()
	const n = 100
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	w.start(t, e, 5, 10)
	batch := e.open(t)
	opened, openedItems, _ := e.api.snapshot()
	addAndSeal(t, e, batch, jobsOf(n, nil))
	e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
	calls, items, _ := e.api.snapshot()

	ends := calls["TransactWriteItems"] - opened["TransactWriteItems"] - 1 // Add's
	assert.Equal(t, 1, opened["TransactWriteItems"], "Open: one transaction")
	assert.Equal(t, 2, openedItems, "Open: the batch item and its one shard")
	assert.Equal(t, n, ends, "one transaction per job end")
	// Writes after Open: Add's shard, Seal's UpdateItem, two items per end, and the
	// fired mark: one UpdateItem per end that found the batch finished (the last end,
	// and any that ran at the same time, up to the worker's concurrency of 10).
	marks := calls["UpdateItem"] - 1
	assert.GreaterOrEqual(t, marks, 1)
	assert.LessOrEqual(t, marks, 10)
	assert.Equal(t, 2*n+2+marks, items-openedItems)
	reads := calls["GetItem"]
	t.Logf("batch of %d jobs, 1 shard: per job end %.2f TransactWriteItems (%.2f items = %.2f write units), %.3f GetItem (the status reads of the test included); per batch: Open 1 TransactWriteItems (%d items), Add 1 TransactWriteItems (1 item, 1 check), Seal 1 UpdateItem, fired mark %d UpdateItem",
		n, float64(ends)/n, float64(2*ends)/n, float64(4*ends)/n, float64(reads)/n, openedItems, marks)
	fmt.Printf("COST jobs=%d transact_per_end=%.2f items_per_end=%.2f write_units_per_end=%.2f getitem_per_job=%.2f fired_marks=%d\n",
		n, float64(ends)/n, float64(2*ends)/n, float64(4*ends)/n, float64(reads)/n, marks)
}

// nullSender takes the batch's jobs without sending them (the scaled test hands them to
// the middleware itself, so it measures DynamoDB alone), refusing a unique key it took
// before as the producer does.
type nullSender struct {
	mu       sync.Mutex
	prepared []producer.Prepared
	unique   map[string]string
}

func (s *nullSender) SendPrepared(ctx context.Context, m producer.Prepared) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, taken := s.unique[m.UniqueKey]; taken && m.UniqueKey != "" {
		return "", &producer.DuplicateJobError{Key: m.UniqueKey, MessageID: id}
	}
	if m.UniqueKey != "" {
		s.unique[m.UniqueKey] = "m-" + m.JobID()
	}
	s.prepared = append(s.prepared, m)
	return "m-" + m.JobID(), nil
}

func (s *nullSender) SendPreparedBatch(ctx context.Context, messages []producer.Prepared) ([]producer.Result, error) {
	results := make([]producer.Result, len(messages))
	for i, m := range messages {
		id, _ := s.SendPrepared(ctx, m)
		results[i] = producer.Result{MessageID: id, JobID: m.JobID()}
	}
	return results, nil
}

// message is what a worker receives for m.
func message(m producer.Prepared, receiveCount int) *sqsworker.Message {
	attributes := map[string]sqsworker.MessageAttribute{}
	for name, a := range m.Attributes {
		attributes[name] = sqsworker.MessageAttribute{DataType: aws.ToString(a.DataType), StringValue: aws.ToString(a.StringValue)}
	}
	return &sqsworker.Message{ID: "m-" + m.JobID(), Body: m.Body, MessageAttributes: attributes, ReceiveCount: receiveCount}
}

// TestEmulatorShardsSpreadTheEndWrites: 1,000 jobs (fixed ids, so the spread is the same
// every run) on 8 shards end through the middleware, 16 at a time (every 50th delivered
// twice): the counts are exact, success fires once, and no shard's key takes more than
// 1/8 of the shard writes plus 25% (three standard deviations of a shard's share of
// 1,000 ids: sqrt(1000 × 1/8 × 7/8) = 10.5 jobs of a mean of 125). With 100,000 jobs the
// spread is within 3% (TestShardOfSpreadsEvenly), so at 2,000 ends/s the hottest key
// takes 2 × 2,000 / 8 × 1.03 = 515 write units/s, under DynamoDB's 1,000 (one counter
// would take 4,000). moto copies a table for every transaction, so a larger batch takes
// minutes there (localstack/README.md).
func TestEmulatorShardsSpreadTheEndWrites(t *testing.T) {
	t.Parallel()
	const n, shards, workers = 1000, 8, 16
	db := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, db)
	api := newCountingAPI(db)
	sender := &nullSender{unique: map[string]string{}}
	b, err := batches.New(api, sender, batches.Config{Table: tableName, Shards: shards})
	require.NoError(t, err)
	batch, err := b.Open(context.Background(), batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: producer.Job{Type: "done", Body: "done"}}})
	require.NoError(t, err)
	jobs := jobsOf(n, nil)
	for i := range jobs {
		jobs[i].ID = producer.DerivedJobID(time.UnixMilli(1_780_000_000_000+int64(i)), fmt.Sprint("job-", i))
	}
	_, err = batch.Add(context.Background(), "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobs...)
	require.NoError(t, err)
	require.NoError(t, batch.Seal(context.Background()))
	prepared := append([]producer.Prepared(nil), sender.prepared...)
	require.Len(t, prepared, n)

	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), b.Middleware(batches.MiddlewareConfig{}))
	start := time.Now()
	var wg sync.WaitGroup
	feed := make(chan *sqsworker.Message)
	for range workers {
		wg.Go(func() {
			for m := range feed {
				assert.NoError(t, handler.Handle(context.Background(), m))
			}
		})
	}
	for i, job := range prepared {
		feed <- message(job, 1)
		if i%50 == 0 {
			feed <- message(job, 2) // a duplicate delivery
		}
	}
	close(feed)
	wg.Wait()
	elapsed := time.Since(start)

	status, err := b.Get(context.Background(), batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: n, Succeeded: n}, status.Counts)
	assert.False(t, status.Success.FiredAt.IsZero())
	sender.mu.Lock()
	callbacks := len(sender.prepared) - n
	sender.mu.Unlock()
	assert.Equal(t, 1, callbacks, "success sent once")

	_, _, perKey := api.snapshot()
	hottest, shardWrites := 0, 0
	for key, writes := range perKey {
		if strings.HasPrefix(key, "batch#shard#") {
			shardWrites += writes
			hottest = max(hottest, writes)
		}
	}
	// Every shard write: Open's put, Add's raise, each end (the duplicates' writes are
	// refused transactions: counted by the wrapper, cancelled by DynamoDB).
	assert.LessOrEqual(t, float64(hottest), float64(shardWrites)/shards*1.25)
	t.Logf("%d ends on %d shards in %s (%.0f ends/s on the emulator); shard writes %d, hottest shard %d (%.1f%% of them, even would be %.1f%%)",
		n, shards, elapsed.Round(time.Millisecond), n/elapsed.Seconds(), shardWrites, hottest, 100*float64(hottest)/float64(shardWrites), 100.0/shards)
	fmt.Printf("SHARDS jobs=%d shards=%d hottest_share=%.4f even_share=%.4f ends_per_s_emulator=%.0f\n", n, shards, float64(hottest)/float64(shardWrites), 1.0/shards, n/elapsed.Seconds())
}

// TestEmulatorCostPerJobWithIdempotency: the same batch with the idempotency middleware
// inside, its records kept as long as the batch's: each job's success is counted in the
// transaction that completes its idempotency record (txjoin), so a job costs its claim
// (one PutItem) and one TransactWriteItems of three actions: the completion, its shard's
// count and a check that it has no marker. Of the two items written, the shard's is the
// batch's; without batches the completion is one UpdateItem. No marker is written.
func TestEmulatorCostPerJobWithIdempotency(t *testing.T) {
	t.Parallel()
	const n = 100
	e := newEnv(t, 1, 5)
	w := newWorker(t, e.queue.URL)
	answered := w.startIdempotent(t, e, 5, 10, batches.DefaultRetention)
	batch := e.open(t)
	opened, openedItems, _ := e.api.snapshot()
	addAndSeal(t, e, batch, jobsOf(n, nil))
	e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, map[string]int{batch.ID() + ":success": 1}, e.settled(t))
	calls, items, perKey := e.api.snapshot()
	e.api.mu.Lock()
	actions := append([]int(nil), e.api.actions[2:]...) // after Open's and Add's
	checks := e.api.checks
	e.api.mu.Unlock()

	require.Zero(t, answered.Load(), "no delivery was a duplicate")
	ends := calls["TransactWriteItems"] - opened["TransactWriteItems"] - 1 // Add's
	assert.Equal(t, n, ends, "one transaction per job end: its completion")
	for _, a := range actions {
		assert.Equal(t, 3, a, "the completion, the shard's count, the marker check")
	}
	assert.Equal(t, n+1, checks, "one per end, and Add's")
	assert.Equal(t, n, calls["PutItem"], "one claim per job")
	for key := range perKey {
		assert.False(t, strings.HasPrefix(key, "batch#job#"), "no marker written: %s", key)
	}
	// Writes after Open: Add's shard, Seal's UpdateItem, the claims, two items per end
	// (the completion and the shard), the fired marks.
	marks := calls["UpdateItem"] - 1
	assert.GreaterOrEqual(t, marks, 1)
	assert.LessOrEqual(t, marks, 10)
	assert.Equal(t, 2+n+2*n+marks, items-openedItems)
	extra := float64(2*ends-n) / n // the completions' items less the UpdateItem each would be alone
	t.Logf("batch of %d jobs with idempotency: per job %.2f TransactWriteItems of 3 actions (2 items written: %.2f beyond the completion alone; %d write units against 1 alone; 1 condition check), %.2f GetItem (the test's status reads included)",
		n, float64(ends)/n, extra, 4, float64(calls["GetItem"])/n)
	fmt.Printf("COST_IDEMPOTENT jobs=%d transact_per_end=%.2f items_per_end=%.2f extra_items_per_job=%.2f write_units_per_end=%.2f write_units_alone=1.00 checks_per_end=%.2f getitem_per_job=%.2f fired_marks=%d\n",
		n, float64(ends)/n, float64(2*ends)/n, extra, float64(4*ends)/n, float64(checks-1)/float64(ends), float64(calls["GetItem"])/n, marks)
}
