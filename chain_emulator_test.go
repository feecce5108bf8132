package sqsworker_test

// The README's whole worker chain ("Putting the middlewares together",
// Example_middlewareOrder) on the local emulators: SQS on LocalStack or ElasticMQ;
// DynamoDB, S3 and KMS on moto. One batch of jobs goes through every middleware in the
// documented order, and the test checks what each middleware promises its neighbours,
// with exact counts.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// chainPatience bounds every wait for the emulators, shared by every test run on the
// machine (moto serves one request at a time); a wait ends when its condition holds.
const chainPatience = 3 * time.Minute

// chainMaxReceives is the queue's redrive policy maxReceiveCount, and the limiter's,
// the batches' and the records' MaxReceiveCount.
const chainMaxReceives = 3

// chainJob is a job of the chain test: Kind says how its handler behaves.
type chainJob struct {
	N    int    `json:"n"`
	Kind string `json:"kind"` // block, plain, large, due, failonce
	Data string `json:"data,omitempty"`
}

// hopRecorder is the producer as a Hopper, remembering the job id of each hop it sent.
type hopRecorder struct {
	sqsworker.Hopper
	mu   sync.Mutex
	hops map[string]int // job id -> hops
}

func (h *hopRecorder) Hop(ctx context.Context, message *sqsworker.Message, remaining time.Duration) error {
	err := h.Hopper.Hop(ctx, message, remaining)
	if err == nil {
		h.mu.Lock()
		h.hops[message.JobID()]++
		h.mu.Unlock()
	}
	return err
}

func (h *hopRecorder) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hops[id]
}

// chainCallbacks counts the batch callbacks handled on the callback queue, by kind.
type chainCallbacks struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *chainCallbacks) Handle(_ context.Context, message *sqsworker.Message) error {
	_, kind, ok := batches.CallbackOf(message)
	if !ok {
		return sqsworker.Permanent("NotACallback", nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[kind]++
	return nil
}

func (c *chainCallbacks) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// chainHandler is the job type's handler: it counts runs per job id and keeps the
// last message each run saw (after the resolver and the decrypter).
type chainHandler struct {
	t       *testing.T
	started chan string // job ids of "block" jobs, when they start

	mu       sync.Mutex
	runs     map[string]int
	messages map[string]sqsworker.Message
	ranAt    map[string]time.Time
}

func (h *chainHandler) handle(ctx context.Context, message *sqsworker.Message) error {
	var job chainJob
	if err := json.Unmarshal([]byte(message.Body), &job); err != nil {
		h.t.Errorf("job %s: the handler got a body that is not the job's JSON (resolver or decrypter skipped?): %.80q", message.JobID(), message.Body)
		return sqsworker.Permanent("BadBody", err)
	}
	id := message.JobID()
	h.mu.Lock()
	h.runs[id]++
	run := h.runs[id]
	h.messages[id] = *message
	h.ranAt[id] = time.Now()
	h.mu.Unlock()
	switch job.Kind {
	case "block": // runs until its job is cancelled, holding the limit's one permit
		h.started <- id
		<-ctx.Done()
		return context.Cause(ctx)
	case "finish": // runs until its job is cancelled, then returns nil: its work done anyway
		h.started <- id
		<-ctx.Done()
		return nil
	case "failonce":
		if run == 1 {
			return sqsworker.RetryAfter(time.Second, fmt.Errorf("job %d: first attempt fails", job.N))
		}
	}
	return nil
}

func (h *chainHandler) runCount(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs[id]
}

func (h *chainHandler) message(id string) sqsworker.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.messages[id]
}

func (h *chainHandler) ranAtOf(id string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ranAt[id]
}

// chainRig is one test's services and every middleware of the chain.
type chainRig struct {
	sqs       *sqs.Client
	db        *dynamodb.Client
	table     string
	queue     testenv.Queue
	callbacks testenv.Queue
	producer  *producer.Producer
	delayHops *hopRecorder
	limitHops *hopRecorder
	limits    *fleetlimit.Limiter
	b         *batches.Batches
	records   *jobs.Store
	store     *idempotency.DynamoDBStore
	resolver  *claimcheck.Resolver
	decrypter *encrypt.Decrypter
	mux       *sqsworker.ServeMux
	handler   *chainHandler
	fired     *chainCallbacks
	logs      *testenv.LogLines
	logger    *slog.Logger
}

func newChainRig(t *testing.T) *chainRig {
	t.Helper()
	r := &chainRig{sqs: testenv.SQS(t), db: testenv.DynamoDB(t)}
	r.logs, r.logger = testenv.NewLogLines()
	r.table = testenv.NewTable(t, r.db)
	r.queue = testenv.NewQueue(t, r.sqs, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second, MaxReceiveCount: chainMaxReceives})
	r.callbacks = testenv.NewQueue(t, r.sqs, testenv.QueueOptions{VisibilityTimeout: 10 * time.Second})

	s3client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(testenv.UniqueName(t))
	_, err := s3client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		listed, err := s3client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err == nil {
			for _, object := range listed.Contents {
				_, _ = s3client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: object.Key})
			}
		}
		_, _ = s3client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	})
	payloads, err := claimcheck.NewStore(s3client, claimcheck.Config{Bucket: bucket, KeyPrefix: "jobs/"})
	require.NoError(t, err)
	r.resolver, err = claimcheck.NewResolver(s3client, claimcheck.ResolverConfig{Allow: []claimcheck.Location{payloads.Location()}})
	require.NoError(t, err)

	keys := testenv.KMS(t)
	keyARN, _ := testenv.NewKMSKey(t, keys)
	encrypter, err := encrypt.NewEncrypter(keys, encrypt.EncrypterConfig{KeyID: keyARN})
	require.NoError(t, err)
	r.decrypter, err = encrypt.NewDecrypter(keys, encrypt.DecrypterConfig{AllowedKeys: []string{keyARN}})
	require.NoError(t, err)

	r.producer, err = producer.New(r.sqs, producer.Config{
		Unique:           producer.NewDynamoDBUniqueStore(r.db, r.table),
		PayloadStore:     payloads,
		OffloadThreshold: 4096,
		Encrypter:        encrypter,
		MaxHop:           2 * time.Second,
		Logger:           r.logger,
	})
	require.NoError(t, err)
	r.delayHops = &hopRecorder{Hopper: r.producer, hops: map[string]int{}}
	r.limitHops = &hopRecorder{Hopper: r.producer, hops: map[string]int{}}
	r.limits, err = fleetlimit.New(r.db, fleetlimit.Config{
		Table: r.table, Name: "chain", Concurrency: 1, RetryDelay: time.Second,
		Key: func(m *sqsworker.Message) string {
			tenant, _ := m.StringAttribute("tenant")
			return tenant // "" (no limit) for the jobs without one
		},
		Hopper: r.limitHops, MaxReceiveCount: chainMaxReceives,
	})
	require.NoError(t, err)
	r.b, err = batches.New(r.db, r.producer, batches.Config{Table: r.table, Logger: r.logger})
	require.NoError(t, err)
	r.records, err = jobs.NewStore(r.db, jobs.Config{Table: r.table})
	require.NoError(t, err)
	r.store = idempotency.NewDynamoDBStore(r.db, r.table)

	r.handler = &chainHandler{t: t, started: make(chan string, 4), runs: map[string]int{}, messages: map[string]sqsworker.Message{}, ranAt: map[string]time.Time{}}
	r.mux = sqsworker.NewServeMux()
	r.mux.RegisterFunc("chain", r.handler.handle)

	r.fired = &chainCallbacks{counts: map[string]int{}}
	r.startPoller(t, r.callbacks.URL, r.fired)
	return r
}

// documentedChain is the README's order, outermost first.
func (r *chainRig) documentedChain() sqsworker.Handler {
	return sqsworker.Chain(r.mux, r.middlewares()...)
}

// middlewares are the README's middlewares in its order, outermost first: delay, limit,
// batches, records, idempotency, resolver, decrypter.
func (r *chainRig) middlewares() []sqsworker.Middleware {
	return []sqsworker.Middleware{
		sqsworker.DelayMiddleware(r.delayHops),
		r.limits.Middleware(),
		r.b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: chainMaxReceives}),
		r.records.Middleware(jobs.MiddlewareConfig{MaxReceiveCount: chainMaxReceives, CheckInterval: 200 * time.Millisecond, Logger: r.logger}),
		idempotency.Middleware(r.store, idempotency.Config{TTL: batches.DefaultRetention, Logger: r.logger}),
		r.resolver.Middleware(),
		r.decrypter.Middleware(),
	}
}

func (r *chainRig) startPoller(t *testing.T, queueURL string, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	server, err := poller.New(r.sqs, poller.Config{QueueURL: queueURL, WaitTime: time.Second, Concurrency: 12, Logger: r.logger}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

func (r *chainRig) open(t *testing.T) *batches.Batch {
	t.Helper()
	batch, err := r.b.Open(context.Background(), batches.Callbacks{
		Success:  &batches.CallbackJob{QueueURL: r.callbacks.URL, Job: producer.Job{Type: "batch-success", Payload: map[string]string{"kind": "success"}}},
		Complete: &batches.CallbackJob{QueueURL: r.callbacks.URL, Job: producer.Job{Type: "batch-complete", Payload: map[string]string{"kind": "complete"}}},
	})
	require.NoError(t, err)
	return batch
}

func (r *chainRig) status(t *testing.T, id string) batches.Status {
	t.Helper()
	status, err := r.b.Get(context.Background(), id)
	require.NoError(t, err)
	return status
}

// marker reports whether the batch holds a marker item for the job (an end counted
// apart from an idempotency completion).
func (r *chainRig) marker(t *testing.T, batchID, jobID string) bool {
	t.Helper()
	key, err := table.BatchJobKey(batchID, jobID)
	require.NoError(t, err)
	output, err := r.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: table.KeyAttribute(key), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return len(output.Item) > 0
}

func chainJobOf(n int, kind string, tenant string) producer.Job {
	return chainJobDue(n, kind, tenant, 5*time.Second)
}

// chainJobDue is chainJobOf with the delay of a "due" job.
func chainJobDue(n int, kind string, tenant string, due time.Duration) producer.Job {
	job := producer.Job{Type: "chain", Payload: chainJob{N: n, Kind: kind}}
	if kind == "large" {
		job.Payload = chainJob{N: n, Kind: kind, Data: strings.Repeat("x", 6000)}
	}
	if kind == "due" {
		job.Delay = due
	}
	if tenant != "" {
		job.Attributes = map[string]sqstypes.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String(tenant)}}
	}
	return job
}

// TestEmulatorWholeChainInTheDocumentedOrder runs one batch of 12 jobs through
// DelayMiddleware, the fleet limit, batches, job records, idempotency, the claim-check
// resolver and the decrypter, in the README's order, and checks that they compose:
//
//   - job 0 holds the limit's one permit (key "a") until it is cancelled through its
//     record; jobs 1-3 (key "a") meanwhile are deferred and hopped by the limiter (its
//     Hopper the producer) and never reach the batch or the records: while they wait the
//     batch counts exactly the 8 other jobs succeeded, and they have no record;
//   - jobs 4 and 5 are larger than the producer's 4 KiB offload threshold once encrypted:
//     S3 holds their ciphertext, the resolver fetches it, the decrypter opens it;
//   - job 6 is due in 5 s with hops of 2 s: DelayMiddleware hops it, and it runs once, when due;
//   - job 7 fails its first attempt and succeeds on the second;
//   - at the end the batch has Added 12, Succeeded 11, DeadLettered 1 (the cancelled job,
//     an end without success), its complete callback handled exactly once and its success
//     callback never; every handler ran once (job 7 twice); every record is succeeded
//     (Attempts 1, job 7's 2) but job 0's, cancelled; each success was counted in its
//     idempotency record's completion (the record completed, no batch marker), the
//     cancelled job's end apart (its marker, no record); the dead-letter queue is empty.
func TestEmulatorWholeChainInTheDocumentedOrder(t *testing.T) {
	t.Parallel()
	r := newChainRig(t)
	ctx := context.Background()
	r.startPoller(t, r.queue.URL, r.documentedChain())
	batch := r.open(t)

	// Job 0 first, alone: it takes the permit of key "a" before jobs 1-3 arrive.
	blocker, err := batch.Add(ctx, r.queue.URL, chainJobOf(0, "block", "a"))
	require.NoError(t, err)
	blockerID := blocker[0]
	require.Equal(t, blockerID, testenv.Recv(t, r.handler.started, chainPatience, "job 0 started, holding the permit"))

	rest := []producer.Job{
		chainJobOf(1, "plain", "a"), chainJobOf(2, "plain", "a"), chainJobOf(3, "plain", "a"),
		chainJobOf(4, "large", ""), chainJobOf(5, "large", ""),
		chainJobOf(6, "due", ""),
		chainJobOf(7, "failonce", ""),
		chainJobOf(8, "plain", ""), chainJobOf(9, "plain", ""), chainJobOf(10, "plain", ""), chainJobOf(11, "plain", ""),
	}
	sentAt := time.Now()
	restIDs, err := batch.Add(ctx, r.queue.URL, rest...)
	require.NoError(t, err)
	require.NoError(t, batch.Seal(ctx))
	ids := append([]string{blockerID}, restIDs...)
	limited, free := ids[1:4], ids[4:]

	// While job 0 holds the permit: jobs 1-3 hop at least once each, the 8 free jobs
	// succeed, and the batch counts exactly those.
	testenv.Eventually(t, chainPatience, "jobs 1-3 hopped by the limiter and the 8 free jobs counted", func() bool {
		for _, id := range limited {
			if r.limitHops.count(id) == 0 {
				return false
			}
		}
		return r.status(t, batch.ID()).Succeeded == int64(len(free))
	})
	waiting := r.status(t, batch.ID())
	assert.Equal(t, batches.Counts{Added: 12, Pending: 4, Succeeded: 8, DeadLettered: 0}, waiting.Counts, "while jobs 1-3 wait for the permit")
	for _, id := range limited {
		assert.Zero(t, r.handler.runCount(id), "job %s ran while job 0 held the only permit", id)
		_, err := r.records.Get(ctx, id)
		assert.ErrorIs(t, err, jobs.ErrNotFound, "job %s was only deferred and hopped: it has no record", id)
		assert.False(t, r.marker(t, batch.ID(), id), "job %s: a hop is no end", id)
	}
	running, err := r.records.Get(ctx, blockerID)
	require.NoError(t, err)
	assert.Equal(t, jobs.StateRunning, running.State)

	// Cancel job 0 while it runs: it ends as cancelled, the permit is freed, jobs 1-3 run.
	_, err = r.records.Cancel(ctx, blockerID)
	require.NoError(t, err)
	final := func() batches.Status { return r.status(t, batch.ID()) }
	testenv.Eventually(t, chainPatience, "every job ended and the complete callback handled", func() bool {
		return final().Pending == 0 && r.fired.snapshot()["complete"] == 1
	})
	testenv.WaitQueueEmpty(t, r.sqs, r.callbacks.URL, chainPatience)
	testenv.WaitQueueEmpty(t, r.sqs, r.queue.URL, chainPatience)

	status := final()
	assert.Equal(t, batches.Counts{Added: 12, Pending: 0, Succeeded: 11, DeadLettered: 1}, status.Counts)
	assert.Equal(t, map[string]int{"complete": 1}, r.fired.snapshot(), "the complete callback once, the success callback never")
	require.NotNil(t, status.Complete)
	require.NotNil(t, status.Success)
	assert.False(t, status.Complete.FiredAt.IsZero())
	assert.True(t, status.Success.FiredAt.IsZero())

	for i, id := range ids {
		wantRuns, wantState, wantAttempts := 1, jobs.StateSucceeded, 1
		switch i {
		case 0:
			wantState = jobs.StateCancelled
		case 7:
			wantRuns, wantAttempts = 2, 2
		}
		assert.Equal(t, wantRuns, r.handler.runCount(id), "job %d's handler runs", i)
		record, err := r.records.Get(ctx, id)
		if assert.NoError(t, err, "job %d's record", i) {
			assert.Equal(t, wantState, record.State, "job %d's record", i)
			assert.Equal(t, wantAttempts, record.Attempts, "job %d's record attempts (a hop is no start)", i)
		}
		storedKey, err := idempotency.StoredKey("", id)
		require.NoError(t, err)
		idem, err := r.store.Get(ctx, storedKey)
		if i == 0 {
			assert.ErrorIs(t, err, idempotency.ErrNotFound, "the cancelled job's idempotency record is released")
			assert.True(t, r.marker(t, batch.ID(), id), "the cancelled job's end is counted apart, with its marker")
			continue
		}
		if assert.NoError(t, err, "job %d's idempotency record", i) {
			assert.Equal(t, idempotency.StatusCompleted, idem.Status, "job %d's idempotency record", i)
		}
		assert.False(t, r.marker(t, batch.ID(), id), "job %d's success is counted with its idempotency completion: no marker", i)
	}

	hopped := 0
	for _, id := range limited {
		if fleetlimit.PriorReceives(ptr(r.handler.message(id))) > 0 {
			hopped++
		}
	}
	assert.Equal(t, len(limited), hopped, "jobs 1-3 ran as hopped copies (PriorReceives > 0)")
	for _, i := range []int{4, 5} {
		var job chainJob
		require.NoError(t, json.Unmarshal([]byte(r.handler.message(ids[i]).Body), &job))
		assert.Len(t, job.Data, 6000, "job %d's payload, fetched from S3 and decrypted", i)
	}
	assert.Equal(t, int64(2), r.resolver.Stats().Resolved, "two payloads fetched from S3")
	assert.GreaterOrEqual(t, r.delayHops.count(ids[6]), 1, "job 6 hopped through DelayMiddleware")
	assert.False(t, r.handler.ranAtOf(ids[6]).Before(sentAt.Add(5*time.Second)), "job 6 ran before it was due")
	for id, n := range r.delayHops.hops {
		assert.Equal(t, ids[6], id, "only job 6 is delayed; %d delay hops of %s", n, id)
	}

	visible, inFlight := testenv.Counts(t, r.sqs, r.queue.DeadLetterQueueURL)
	assert.Zero(t, visible+inFlight, "nothing in the dead-letter queue")
	assert.Empty(t, r.logs.Records("batches: the batch refused the job's end; it is not counted"))
	assert.Empty(t, r.logs.Records("batches: counting the job's end failed; the job is retried"))
}

// TestEmulatorChainFootgunBatchesOutsideDelay documents why batches go inside
// DelayMiddleware: the same chain with the batches middleware moved outermost (ONE
// change) takes a delay hop, which returns nil, for the job's success. A batch of a
// plain job and one due in 10 s (hops of 2 s) finishes, its success callback handled,
// while the delayed job has not run; when it does run, later, nothing is counted again
// (its idempotency completion finds the hop's marker), so the batch never learns of the
// real end.
func TestEmulatorChainFootgunBatchesOutsideDelay(t *testing.T) {
	t.Parallel()
	r := newChainRig(t)
	ctx := context.Background()
	m := r.middlewares()
	wrong := append([]sqsworker.Middleware{m[2]}, append(m[:2:2], m[3:]...)...) // batches, delay, limit, records, ...
	require.Len(t, wrong, len(m))
	r.startPoller(t, r.queue.URL, sqsworker.Chain(r.mux, wrong...))
	batch := r.open(t)
	sentAt := time.Now()
	ids, err := batch.Add(ctx, r.queue.URL, chainJobOf(0, "plain", ""), chainJobDue(1, "due", "", 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, batch.Seal(ctx))

	testenv.Eventually(t, chainPatience, "the batch finished", func() bool {
		return r.status(t, batch.ID()).Pending == 0 && r.fired.snapshot()["success"] == 1
	})
	if time.Since(sentAt) < 10*time.Second { // the delayed job cannot have run yet
		assert.Zero(t, r.handler.runCount(ids[1]), "the delayed job ran")
		assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, r.status(t, batch.ID()).Counts, "the hop was counted as the delayed job's success")
		assert.True(t, r.marker(t, batch.ID(), ids[1]), "the hop's 'success' was counted apart, with a marker")
	}
	assert.GreaterOrEqual(t, r.delayHops.count(ids[1]), 1)

	testenv.Eventually(t, chainPatience, "the delayed job ran", func() bool { return r.handler.runCount(ids[1]) == 1 })
	testenv.WaitQueueEmpty(t, r.sqs, r.queue.URL, chainPatience)
	testenv.WaitQueueEmpty(t, r.sqs, r.callbacks.URL, chainPatience)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, r.status(t, batch.ID()).Counts, "the real end is not counted again")
	assert.Equal(t, map[string]int{"success": 1}, r.fired.snapshot(), "the success callback, once, before the delayed job ran")
	record, err := r.records.Get(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, record.State, "the records, still inside the delay, see only the real run")
	assert.Equal(t, 1, record.Attempts)
}

// TestEmulatorChainCancelledJobThatFinishes: a job cancelled while it runs whose
// handler returns nil anyway (it ignored its context, or finished just as the request
// was seen) has done its work, and every part of the chain says so: its idempotency
// record completed (with the batch's count, so no marker), the batch counting a
// success and sending its success callback, and its job record succeeded. (Before the
// fix the record said cancelled while the batch counted a success; without the
// idempotency middleware the batch counted the same job dead-lettered.)
func TestEmulatorChainCancelledJobThatFinishes(t *testing.T) {
	t.Parallel()
	r := newChainRig(t)
	ctx := context.Background()
	r.startPoller(t, r.queue.URL, r.documentedChain())
	batch := r.open(t)
	ids, err := batch.Add(ctx, r.queue.URL, chainJobOf(0, "finish", ""))
	require.NoError(t, err)
	require.NoError(t, batch.Seal(ctx))
	testenv.Recv(t, r.handler.started, chainPatience, "the job started")
	_, err = r.records.Cancel(ctx, ids[0])
	require.NoError(t, err)
	testenv.Eventually(t, chainPatience, "the batch finished, its callback handled", func() bool {
		return r.status(t, batch.ID()).Pending == 0 && len(r.fired.snapshot()) > 0
	})
	testenv.WaitQueueEmpty(t, r.sqs, r.queue.URL, chainPatience)
	testenv.WaitQueueEmpty(t, r.sqs, r.callbacks.URL, chainPatience)

	assert.Equal(t, batches.Counts{Added: 1, Succeeded: 1}, r.status(t, batch.ID()).Counts)
	assert.Equal(t, map[string]int{"success": 1}, r.fired.snapshot())
	assert.False(t, r.marker(t, batch.ID(), ids[0]), "counted with the idempotency completion")
	record, err := r.records.Get(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, jobs.StateSucceeded, record.State, "the record agrees with the batch")
	assert.True(t, record.CancelRequested)
	storedKey, err := idempotency.StoredKey("", ids[0])
	require.NoError(t, err)
	idem, err := r.store.Get(ctx, storedKey)
	require.NoError(t, err)
	assert.Equal(t, idempotency.StatusCompleted, idem.Status)
	assert.Equal(t, 1, r.handler.runCount(ids[0]))
}

func ptr[T any](v T) *T { return &v }
