package producer_test

// Tests against the local SQS and DynamoDB emulators (see internal/testing/testenv); each runs in
// parallel with the others on its own queues and tables.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

func newProducer(t *testing.T, api producer.API, config producer.Config) *producer.Producer {
	t.Helper()
	p, err := producer.New(api, config)
	require.NoError(t, err)
	return p
}

// startPoller runs a poller on queueURL for the test; options adjust its Config.
func startPoller(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler, options ...func(*poller.Config)) *poller.Server {
	t.Helper()
	config := poller.Config{QueueURL: queueURL, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}
	for _, option := range options {
		option(&config)
	}
	server, err := poller.New(client, config, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// receiveAll receives (and deletes) every message of queueURL until want distinct
// bodies were seen or timeout passed, and returns how often each body arrived. Callers
// give it more than the test queues' 30 s visibility timeout (see below).
func receiveAll(t *testing.T, client *sqs.Client, queueURL string, want int, timeout time.Duration) map[string]int {
	t.Helper()
	arrivals := map[string]int{}
	deadline := time.Now().Add(timeout)
	for len(arrivals) < want && time.Now().Before(deadline) {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			// A lost response (the emulator under load has cut one short) leaves its
			// messages in flight until their visibility timeout; they come back then.
			t.Logf("receive failed, trying again: %v", err)
			continue
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(output.Messages))
		for i, message := range output.Messages {
			arrivals[aws.ToString(message.Body)]++
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: message.ReceiptHandle}
		}
		if len(entries) > 0 {
			deleted, err := client.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
			require.NoError(t, err)
			require.Empty(t, deleted.Failed)
		}
	}
	return arrivals
}

func TestEmulatorUnknownJobTypeDeadLettersAfterOneReceive(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	p := newProducer(t, client, producer.Config{})
	id, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "resize-image", Payload: map[string]int{"width": 100}})
	require.NoError(t, err)

	mux := sqsworker.NewServeMux()
	var known atomic.Int32
	mux.RegisterFunc("welcome-email", func(context.Context, *sqsworker.Message) error { known.Add(1); return nil })
	server := startPoller(t, client, queue.URL, mux)

	var message types.Message
	testenv.Eventually(t, 30*time.Second, "the job in the dead-letter queue", func() bool {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.DeadLetterQueueURL), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		if len(output.Messages) == 1 {
			message = output.Messages[0]
		}
		return len(output.Messages) == 1
	})
	attribute := func(name string) string { return aws.ToString(message.MessageAttributes[name].StringValue) }
	assert.Equal(t, "UnknownJobType", attribute(sqsworker.AttributeFailureReason))
	assert.Equal(t, "1", attribute(sqsworker.AttributeFailureReceiveCount), "dead-lettered after exactly one receive")
	assert.Contains(t, attribute(sqsworker.AttributeFailureError), `no handler for job type "resize-image" (registered: welcome-email)`)
	assert.Equal(t, "resize-image", attribute(sqsworker.AttributeJobType), "the job keeps its type for a redrive")
	assert.Equal(t, `{"width":100}`, aws.ToString(message.Body))
	assert.Zero(t, known.Load())
	testenv.Eventually(t, 10*time.Second, "the original deleted", func() bool { return server.Stats().Deleted == 1 })
	assert.EqualValues(t, 1, server.Stats().Received, "one receive of "+id)
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
}

func TestEmulatorUniqueJobFromTwentyProducers(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	table := testenv.NewTable(t, testenv.DynamoDB(t))
	const producers = 20
	ids := make([]string, producers)
	errs := make([]error, producers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range producers {
		p := newProducer(t, client, producer.Config{Unique: producer.NewDynamoDBUniqueStore(testenv.DynamoDB(t), table)})
		wg.Go(func() {
			<-start
			ids[i], errs[i] = p.Send(context.Background(), queue.URL, producer.Job{Type: "invoice", Payload: map[string]int{"order": 42}, UniqueKey: "invoice-order-42"})
		})
	}
	close(start)
	wg.Wait()

	first := ""
	for i := range producers {
		if errs[i] == nil {
			require.Empty(t, first, "a second producer sent the job")
			first = ids[i]
		}
	}
	require.NotEmpty(t, first, "no producer sent the job: %v", errors.Join(errs...))
	for i := range producers {
		if errs[i] != nil {
			var duplicate *producer.DuplicateJobError
			require.ErrorAs(t, errs[i], &duplicate)
			assert.Equal(t, producer.DuplicateJobError{Key: "invoice-order-42", MessageID: first}, *duplicate)
		}
	}
	arrivals := receiveAll(t, client, queue.URL, 1, 45*time.Second)
	assert.Equal(t, map[string]int{`{"order":42}`: 1}, arrivals)
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
}

func TestEmulatorBatcherMergesAThousandSends(t *testing.T) {
	t.Parallel()
	client, proxy := newCountingSQS(t)
	queue := testenv.NewQueue(t, testenv.SQS(t), testenv.QueueOptions{})
	p := newProducer(t, client, producer.Config{})
	// A window far longer than 1,000 goroutines take to start, so only the last batch
	// goes out before it is full.
	batcher, err := p.NewBatcher(queue.URL, producer.BatcherConfig{Window: 250 * time.Millisecond})
	require.NoError(t, err)
	const n = 1000
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ids[i], errs[i] = batcher.Send(context.Background(), producer.Job{Type: "ping", Body: fmt.Sprintf(`{"n":%d}`, i)})
		})
	}
	wg.Wait()
	require.NoError(t, batcher.Close(context.Background()))
	require.NoError(t, errors.Join(errs...))
	calls := proxy.count("SendMessageBatch")
	assert.LessOrEqual(t, calls, 101, "SendMessageBatch calls for 1,000 sends")
	assert.Zero(t, proxy.count("SendMessage"), "no entry needed a send of its own")
	t.Logf("batcher: %d SendMessageBatch calls for %d messages (%.3f calls per message)", calls, n, float64(calls)/n)
	unique := map[string]bool{}
	for _, id := range ids {
		unique[id] = true
	}
	assert.Len(t, unique, n, "each caller its own message id")

	arrivals := receiveAll(t, testenv.SQS(t), queue.URL, n, 90*time.Second)
	assert.Len(t, arrivals, n)
	for body, count := range arrivals {
		assert.Equal(t, 1, count, body)
	}
	testenv.WaitQueueEmpty(t, testenv.SQS(t), queue.URL, 45*time.Second)
}

func TestEmulatorOversizedJobFailsWithItsSize(t *testing.T) {
	t.Parallel()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention) // the test sets or reads MaximumMessageSize
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(queue.URL), Attributes: map[string]string{"MaximumMessageSize": "1048576"},
	})
	require.NoError(t, err)
	p := newProducer(t, client, producer.Config{})
	// "job-type" + "String" + "blob" and "job-id" + "String" + "j-1" = 33 bytes of
	// attributes.
	exact := strings.Repeat("x", 1<<20-33)
	_, err = p.Send(context.Background(), queue.URL, producer.Job{ID: "j-1", Type: "blob", Body: exact})
	require.NoError(t, err, "exactly 1 MiB, attributes included, fits")

	_, err = p.Send(context.Background(), queue.URL, producer.Job{ID: "j-1", Type: "blob", Body: exact + "x"})
	var tooLarge *producer.TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, producer.TooLargeError{QueueURL: queue.URL, Size: 1<<20 + 1, Limit: 1 << 20}, *tooLarge)
	assert.ErrorContains(t, err, "is 1048577 bytes (body plus attributes), above the queue's MaximumMessageSize of 1048576 bytes")

	// The emulator counts as the producer does: the same message sent directly is refused.
	_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(queue.URL), MessageBody: aws.String(exact + "x"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String("blob")},
			sqsworker.AttributeJobID:   {DataType: aws.String("String"), StringValue: aws.String("j-1")},
		},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Message must be shorter than 1048576 bytes")

	// A 1 MiB receive is slow on a loaded emulator: the deadline is generous.
	arrivals := receiveAll(t, client, queue.URL, 1, 60*time.Second)
	assert.Len(t, arrivals, 1, "only the job that fits was sent")
	assert.Equal(t, 1, arrivals[exact], "the 1 MiB job arrived once, unchanged")
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
}

// An expired key is free again although its item is still in the table (DynamoDB's TTL
// deletes late, moto never): expiry is checked in the condition, not left to TTL.
func TestEmulatorUniqueKeyExpiryCheckedInCode(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	store := producer.NewDynamoDBUniqueStore(testenv.DynamoDB(t), testenv.NewTable(t, testenv.DynamoDB(t)))
	ctx := context.Background()
	past := time.Now().Add(-2 * time.Hour)
	_, reserved, err := store.Reserve(ctx, "report-2026-11", "old-owner", past, past.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, reserved)
	require.NoError(t, store.Confirm(ctx, "report-2026-11", "old-owner", "old-message", past.Add(time.Hour)))
	assert.Error(t, store.Confirm(ctx, "report-2026-11", "someone-else", "other", time.Now().Add(time.Hour)), "only the owner confirms")

	p := newProducer(t, client, producer.Config{Unique: store})
	id, err := p.Send(ctx, queue.URL, producer.Job{Type: "report", Body: `{}`, UniqueKey: "report-2026-11"})
	require.NoError(t, err, "the expired key is taken again")
	_, err = p.Send(ctx, queue.URL, producer.Job{Type: "report", Body: `{}`, UniqueKey: "report-2026-11"})
	var duplicate *producer.DuplicateJobError
	require.ErrorAs(t, err, &duplicate)
	assert.Equal(t, id, duplicate.MessageID)

	// A reservation released after a failed send frees the key at once.
	_, reserved, err = store.Reserve(ctx, "released", "owner-1", time.Now(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, reserved)
	require.NoError(t, store.Release(ctx, "released", "owner-1"))
	_, reserved, err = store.Reserve(ctx, "released", "owner-2", time.Now(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, reserved)
}

// On a FIFO queue a unique key is the deduplication id: SQS itself keeps the copies of
// concurrent sends out (for its 5-minute deduplication interval); no store is needed.
func TestEmulatorUniqueJobOnFIFOQueue(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	p := newProducer(t, client, producer.Config{})
	var wg sync.WaitGroup
	errs := make([]error, 20)
	ids := make([]string, 20)
	for i := range 20 {
		wg.Go(func() {
			ids[i], errs[i] = p.Send(context.Background(), queue.URL, producer.Job{Type: "invoice", Payload: map[string]int{"order": 42}, GroupID: "orders", UniqueKey: "invoice-order-42"})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	arrivals := receiveAll(t, client, queue.URL, 1, 45*time.Second)
	assert.Equal(t, map[string]int{`{"order":42}`: 1}, arrivals)
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	t.Logf("%d distinct message ids returned for 20 deduplicated sends", len(distinct))
}

// The idempotency middleware's default key is the producer's IdempotencyKey: two sends
// of one key run the handler once. The producer's trace context reaches the handler.
func TestEmulatorIdempotencyKeyAndTraceContextReachTheWorker(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	store := idempotency.NewDynamoDBStore(testenv.DynamoDB(t), testenv.NewTable(t, testenv.DynamoDB(t)))
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := newProducer(t, client, producer.Config{TraceContext: func(ctx context.Context) map[string]string {
		return map[string]string{"traceparent": traceparent}
	}})
	var mu sync.Mutex
	var runs []string
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "charge", func(ctx context.Context, job struct{ Cents int }) error {
		message, _ := sqsworker.MessageFromContext(ctx)
		trace, _ := message.StringAttribute("traceparent")
		mu.Lock()
		runs = append(runs, trace)
		mu.Unlock()
		return nil
	})
	server := startPoller(t, client, queue.URL, sqsworker.Chain(mux, idempotency.Middleware(store, idempotency.Config{})))
	// The second send follows the first's completion, so it meets a completed record (two
	// copies in flight at once would defer the second for the first's lease instead).
	for sent := range 2 {
		_, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "charge", Payload: map[string]int{"Cents": 500}, IdempotencyKey: "charge-order-7"})
		require.NoError(t, err)
		testenv.Eventually(t, 30*time.Second, "the message deleted", func() bool { return server.Stats().Deleted == int64(sent+1) })
	}
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{traceparent}, runs, "one run, with the producer's trace context")
}

// TestEmulatorTraceContextPastTheBudgetTravelsInAWSTraceHeader: a job whose attributes
// and sqsworker's take all 10 is sent, its trace context in the AWSTraceHeader system
// attribute (which SQS does not count), and the poller's handler reads it there; no
// traceparent message attribute is added.
func TestEmulatorTraceContextPastTheBudgetTravelsInAWSTraceHeader(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	p := newProducer(t, client, producer.Config{TraceContext: func(context.Context) map[string]string {
		return map[string]string{"traceparent": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", producer.AttributeAWSTraceHeader: header}
	}})
	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "mail", Body: "{}"})
	require.NoError(t, err)
	attributes := map[string]types.MessageAttributeValue{}
	for i := range 10 - len(prepared.Attributes) {
		attributes["a"+strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("x")}
	}
	type seen struct {
		header      string
		traceparent bool
		attributes  int
	}
	got := make(chan seen, 1)
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("mail", func(ctx context.Context, m *sqsworker.Message) error {
		_, traceparent := m.MessageAttributes["traceparent"]
		got <- seen{m.Attributes[producer.AttributeAWSTraceHeader], traceparent, len(m.MessageAttributes)}
		return nil
	})
	startPoller(t, client, queue.URL, mux)
	_, err = p.Send(context.Background(), queue.URL, producer.Job{Type: "mail", Body: "{}", Attributes: attributes})
	require.NoError(t, err)
	select {
	case s := <-got:
		assert.Equal(t, seen{header: header, traceparent: false, attributes: 10}, s)
	case <-time.After(30 * time.Second):
		t.Fatal("the message was not handled within 30 s")
	}
}

// The producer's tenant key arrives as the message's group id on a standard queue (the
// tenant of SQS fair queues), and the poller counts the messages per tenant.
func TestEmulatorTenantKeyArrivesAsTheGroupID(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	type order struct{ Customer string }
	p := newProducer(t, client, producer.Config{Tenant: func(job producer.Job) string {
		return job.Payload.(order).Customer
	}})
	var mu sync.Mutex
	groups := map[string]int{}
	server := startPoller(t, client, queue.URL, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		groups[message.GroupID]++
		return nil
	}))
	for i := range 6 {
		_, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "ship", Payload: order{Customer: fmt.Sprintf("customer-%d", i%3)}})
		require.NoError(t, err)
	}
	_, err := p.Send(context.Background(), queue.URL, producer.Job{Type: "ship", Payload: order{Customer: "customer-0"}, GroupID: "explicit"})
	require.NoError(t, err, "Job.GroupID wins over the tenant function")
	results, err := p.SendBatch(context.Background(), queue.URL, []producer.Job{{Payload: order{Customer: "customer-1"}}, {Payload: order{Customer: "not a group id"}}})
	require.Error(t, err, "a key SQS would refuse fails its job")
	require.NoError(t, results[0].Err)
	require.ErrorIs(t, results[1].Err, sqsinfo.ErrInvalidMessageGroupID)
	testenv.Eventually(t, 30*time.Second, "eight messages handled", func() bool { return server.Stats().Deleted == 8 })
	mu.Lock()
	assert.Equal(t, map[string]int{"customer-0": 2, "customer-1": 3, "customer-2": 2, "explicit": 1}, groups)
	mu.Unlock()
	counted := map[string]int64{}
	for _, tenant := range server.Stats().Tenants {
		counted[tenant.Tenant] = tenant.Deleted
	}
	assert.Equal(t, map[string]int64{"customer-0": 2, "customer-1": 3, "customer-2": 2, "explicit": 1, sqsworker.TenantOther: 0}, counted)
}
