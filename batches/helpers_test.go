package batches_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/table"
)

// countingAPI counts the DynamoDB calls made through it, by operation, and the items
// written by each (a TransactWriteItems writes one per action), per key.
type countingAPI struct {
	batches.API
	mu        sync.Mutex
	calls     map[string]int
	items     int // written: condition checks are not
	checks    int // condition checks in transactions
	keyWrites map[string]int
	actions   []int // actions per TransactWriteItems, in call order
}

func newCountingAPI(api batches.API) *countingAPI {
	return &countingAPI{API: api, calls: map[string]int{}, keyWrites: map[string]int{}}
}

func (c *countingAPI) record(op string, keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
	if op != "GetItem" && op != "TransactGetItems" {
		c.items += len(keys)
		for _, k := range keys {
			c.keyWrites[k]++
		}
	}
}

// snapshot returns the calls so far, the items written and the writes per key.
func (c *countingAPI) snapshot() (map[string]int, int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, keys := map[string]int{}, map[string]int{}
	for k, v := range c.calls {
		calls[k] = v
	}
	for k, v := range c.keyWrites {
		keys[k] = v
	}
	return calls, c.items, keys
}

// idOf returns an item's partition key.
func idOf(item map[string]dbtypes.AttributeValue) string {
	if v, ok := item[table.PartitionKey].(*dbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (c *countingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.record("PutItem", idOf(in.Item))
	return c.API.PutItem(ctx, in, opts...)
}

func (c *countingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.record("GetItem")
	return c.API.GetItem(ctx, in, opts...)
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.record("UpdateItem", idOf(in.Key))
	return c.API.UpdateItem(ctx, in, opts...)
}

func (c *countingAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.record("DeleteItem", idOf(in.Key))
	return c.API.DeleteItem(ctx, in, opts...)
}

func (c *countingAPI) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	c.record("TransactGetItems")
	return c.API.TransactGetItems(ctx, in, opts...)
}

func (c *countingAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var keys []string
	checks := 0
	for _, action := range in.TransactItems {
		switch {
		case action.Put != nil:
			keys = append(keys, idOf(action.Put.Item))
		case action.Update != nil:
			keys = append(keys, idOf(action.Update.Key))
		case action.Delete != nil:
			keys = append(keys, idOf(action.Delete.Key))
		case action.ConditionCheck != nil:
			checks++
		}
	}
	c.record("TransactWriteItems", keys...)
	c.mu.Lock()
	c.checks += checks
	c.actions = append(c.actions, len(in.TransactItems))
	c.mu.Unlock()
	return c.API.TransactWriteItems(ctx, in, opts...)
}

// env is one test's services: a job queue with its dead-letter queue, a callback queue,
// a table, a producer with unique keys, and the batches.
type env struct {
	sqs       *sqs.Client
	db        *dynamodb.Client
	table     string
	queue     testenv.Queue
	callbacks testenv.Queue
	api       *countingAPI
	producer  *producer.Producer
	b         *batches.Batches
	fired     *firedCallbacks
}

// newEnv makes the services for a test with shards counter items per batch and a
// job queue whose redrive policy moves a message at maxReceiveCount.
func newEnv(t *testing.T, shards, maxReceiveCount int) *env {
	t.Helper()
	e := &env{sqs: testenv.SQS(t), db: testenv.DynamoDB(t)}
	e.table = testenv.NewTable(t, e.db)
	e.queue = testenv.NewQueue(t, e.sqs, testenv.QueueOptions{VisibilityTimeout: 5 * time.Second, MaxReceiveCount: maxReceiveCount})
	e.callbacks = testenv.NewQueue(t, e.sqs, testenv.QueueOptions{VisibilityTimeout: 5 * time.Second})
	e.api = newCountingAPI(e.db)
	var err error
	e.producer, err = producer.New(e.sqs, producer.Config{Unique: producer.NewDynamoDBUniqueStore(e.db, e.table)})
	require.NoError(t, err)
	e.b, err = batches.New(e.api, e.producer, batches.Config{Table: e.table, Shards: shards})
	require.NoError(t, err)
	e.fired = &firedCallbacks{counts: map[string]int{}}
	startPoller(t, e.sqs, e.callbacks.URL, 1, e.fired)
	return e
}

// open opens a batch with both callbacks on the env's callback queue.
func (e *env) open(t *testing.T) *batches.Batch {
	t.Helper()
	batch, err := e.b.Open(context.Background(), batches.Callbacks{
		Success:  &batches.CallbackJob{QueueURL: e.callbacks.URL, Job: producer.Job{Type: "batch-success", Payload: map[string]string{"kind": "success"}}},
		Complete: &batches.CallbackJob{QueueURL: e.callbacks.URL, Job: producer.Job{Type: "batch-complete", Payload: map[string]string{"kind": "complete"}}},
	})
	require.NoError(t, err)
	return batch
}

// settled waits until the callback queue holds no message (every callback sent was
// handled) and returns the callbacks handled per "<batch id>:<kind>".
func (e *env) settled(t *testing.T) map[string]int {
	t.Helper()
	testenv.WaitQueueEmpty(t, e.sqs, e.callbacks.URL, 60*time.Second)
	return e.fired.snapshot()
}

// waitStatus waits until batch id's status satisfies ok, and returns it.
func (e *env) waitStatus(t *testing.T, id string, timeout time.Duration, what string, ok func(batches.Status) bool) batches.Status {
	t.Helper()
	var status batches.Status
	testenv.Eventually(t, timeout, what, func() bool {
		var err error
		status, err = e.b.Get(context.Background(), id)
		require.NoError(t, err)
		return ok(status)
	})
	return status
}

// firedCallbacks is the callback queue's handler: it counts the callbacks by batch and
// kind (batches.CallbackOf).
type firedCallbacks struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *firedCallbacks) Handle(ctx context.Context, message *sqsworker.Message) error {
	id, kind, ok := batches.CallbackOf(message)
	if !ok {
		return sqsworker.Permanent("NotACallback", nil)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[id+":"+kind]++
	return nil
}

func (f *firedCallbacks) snapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// startPoller runs a poller on queueURL for the test.
func startPoller(t *testing.T, client *sqs.Client, queueURL string, concurrency int, handler sqsworker.Handler) {
	t.Helper()
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second, Concurrency: concurrency, Logger: slog.New(slog.DiscardHandler)}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
}

// resend sends a copy of a received message (body and attributes) to queueURL: a
// duplicate delivery, as SQS's at-least-once delivery makes one.
func resend(t *testing.T, client *sqs.Client, queueURL string, message *sqsworker.Message) {
	t.Helper()
	_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(message.Body), MessageAttributes: toSQS(message)})
	require.NoError(t, err)
}

// toSQS returns a received message's attributes as SendMessage takes them.
func toSQS(message *sqsworker.Message) map[string]sqstypes.MessageAttributeValue {
	out := map[string]sqstypes.MessageAttributeValue{}
	for name, a := range message.MessageAttributes {
		out[name] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
	}
	return out
}

func sqsReceive(url string) sqs.ReceiveMessageInput {
	return sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 20, MessageAttributeNames: []string{"All"}}
}

// redriveAll moves want messages from the job queue's dead-letter queue back to it.
func redriveAll(t *testing.T, e *env, want int) {
	t.Helper()
	testenv.Eventually(t, wait, "the dead letters arrived", func() bool {
		visible, _ := testenv.Counts(t, e.sqs, e.queue.DeadLetterQueueURL)
		return visible >= want
	})
	mover, err := redrive.NewMover(e.sqs, redrive.Config{Source: e.queue.DeadLetterQueueURL, Destination: e.queue.URL})
	require.NoError(t, err)
	moved := 0
	for moved < want {
		result, err := mover.Run(context.Background())
		require.NoError(t, err)
		moved += result.Moved
	}
	require.Equal(t, want, moved)
}
