package producer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamotypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// countingDynamoDB counts the calls that reach DynamoDB.
type countingDynamoDB struct {
	producer.DynamoDBAPI
	calls atomic.Int64
}

func (c *countingDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.PutItem(ctx, in, opts...)
}

func (c *countingDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.GetItem(ctx, in, opts...)
}

func (c *countingDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

func (c *countingDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.calls.Add(1)
	return c.DynamoDBAPI.DeleteItem(ctx, in, opts...)
}

// uniqueTable is a fresh table on moto with a counting client.
type uniqueTable struct {
	client *dynamodb.Client
	name   string
	api    *countingDynamoDB
}

func newUniqueTable(t *testing.T) *uniqueTable {
	client := testenv.DynamoDB(t)
	return &uniqueTable{client: client, name: testenv.NewTable(t, client), api: &countingDynamoDB{DynamoDBAPI: client}}
}

func (u *uniqueTable) store() *producer.DynamoDBUniqueStore {
	return producer.NewDynamoDBUniqueStore(u.api, u.name)
}

// item returns the item stored under the exact partition key key (nil when none).
func (u *uniqueTable) item(t *testing.T, key string) map[string]dynamotypes.AttributeValue {
	t.Helper()
	output, err := u.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(u.name), Key: table.KeyAttribute(key), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return output.Item
}

// manualClock is a settable clock for the producer.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// receiveOne receives one message of queueURL (waiting for it) as the worker sees it.
func receiveOne(t *testing.T, client *sqs.Client, queueURL string) *sqsworker.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MessageAttributeNames: []string{"All"},
		VisibilityTimeout: 30}, 1, testenv.ReceiveTimeout)
	return sqsx.FromSDK(messages[0], queueURL, "")
}

// TestEmulatorForeignItemUnderAUniqueKeyIsAnError (moto, LocalStack or ElasticMQ): an item
// under a unique key that is not a unique key's item (an idempotency record written
// there, an owner that is a number, a message id without an expiry) was taken for the
// key's holder: its message id reported as the job's, or the send kept waiting for a
// confirmation that never comes. Now Send fails with an error matching
// ErrMalformedUniqueItem, sends nothing, and leaves the item as it was.
func TestEmulatorForeignItemUnderAUniqueKeyIsAnError(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	unique := newUniqueTable(t)
	future := time.Now().Add(time.Hour)
	p := newProducer(t, client, producer.Config{Unique: unique.store(), UniqueWait: 200 * time.Millisecond})
	for name, item := range map[string]map[string]dynamotypes.AttributeValue{
		"an idempotency record": {"status": &dynamotypes.AttributeValueMemberS{Value: "COMPLETED"}, "lease": &dynamotypes.AttributeValueMemberS{Value: "L"},
			"expiration": &dynamotypes.AttributeValueMemberN{Value: "1893456000"}},
		"owner is a number": {"owner": &dynamotypes.AttributeValueMemberN{Value: "7"}, "message_id": &dynamotypes.AttributeValueMemberS{Value: "m-0"},
			"expiry_ms": &dynamotypes.AttributeValueMemberN{Value: "1893456000000"}},
		"no expiry": {"owner": &dynamotypes.AttributeValueMemberS{Value: "o"}, "message_id": &dynamotypes.AttributeValueMemberS{Value: "m-0"}},
		"message id is a number": {"owner": &dynamotypes.AttributeValueMemberS{Value: "o"}, "message_id": &dynamotypes.AttributeValueMemberN{Value: "1"},
			"expiry_ms": &dynamotypes.AttributeValueMemberN{Value: "1893456000000"}},
	} {
		key := "K-" + strings.ReplaceAll(name, " ", "-")
		stored, err := table.UniqueKey(key)
		require.NoError(t, err)
		item[table.PartitionKey] = &dynamotypes.AttributeValueMemberS{Value: stored}
		_, err = unique.client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(unique.name), Item: item})
		require.NoError(t, err)
		_, err = p.Send(t.Context(), queue.URL, producer.Job{Body: "x", UniqueKey: key, UniqueFor: time.Until(future)})
		assert.ErrorIs(t, err, producer.ErrMalformedUniqueItem, name)
		assert.Equal(t, item, unique.item(t, stored), "%s: the item is unchanged", name)
	}
	visible, inFlight := testenv.Counts(t, client, queue.URL)
	assert.Zero(t, visible+inFlight, "nothing was sent")
}

// TestEmulatorUniqueKeyThatCannotBeAKey (moto): a unique key that is not UTF-8 was sent
// to DynamoDB as U+FFFD (two keys, one item); one too long for a partition key failed
// in DynamoDB. Both are refused before any call now, naming the limit.
func TestEmulatorUniqueKeyThatCannotBeAKey(t *testing.T) {
	t.Parallel()
	unique := newUniqueTable(t)
	p := newProducer(t, newCountingFake(), producer.Config{Unique: unique.store()})
	for _, key := range []string{"k\xff", "k\xfe", strings.Repeat("k", table.MaxKeyBytes)} {
		_, err := p.Send(t.Context(), "https://sqs.us-east-1.amazonaws.com/123456789012/jobs", producer.Job{Body: "x", UniqueKey: key})
		assert.ErrorIs(t, err, table.ErrInvalidKey, "key %.20q", key)
	}
	assert.Zero(t, unique.api.calls.Load(), "no DynamoDB call")
}

// newCountingFake is an SQS stand-in that accepts every send (the unique store is the
// subject here).
func newCountingFake() producer.API { return acceptAll{} }

type acceptAll struct{ producer.API }

func (acceptAll) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": "1048576"}}, nil
}

func (acceptAll) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{MessageId: aws.String("m-1")}, nil
}

// TestEmulatorUniqueModes (moto, LocalStack or ElasticMQ; CASES.md N20 (a), (b) and
// UntilStarted): what frees a unique key. The worker's chain is the handler behind
// UniqueMiddleware on a counting client.
func TestEmulatorUniqueModes(t *testing.T) {
	t.Parallel()

	// (a) UntilWindowEnds, window 5 min: m1 handled at t0+1s frees nothing (the
	// consumer side makes no DynamoDB call); at t0+10s the key is taken by m1; at
	// t0+5m01s it is free again.
	t.Run("UntilWindowEnds", func(t *testing.T) {
		t.Parallel()
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		unique := newUniqueTable(t)
		clock := &manualClock{now: time.Now()}
		p := newProducer(t, client, producer.Config{Unique: unique.store(), Now: clock.Now})
		job := producer.Job{Body: "x", UniqueKey: "K", UniqueFor: 5 * time.Minute}
		m1, err := p.Send(t.Context(), queue.URL, job)
		require.NoError(t, err)
		consumer := &countingDynamoDB{DynamoDBAPI: unique.client}
		worker := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
			producer.UniqueMiddleware(producer.NewDynamoDBUniqueStore(consumer, unique.name), nil))
		clock.Add(time.Second)
		require.NoError(t, worker.Handle(t.Context(), receiveOne(t, client, queue.URL)))
		assert.Zero(t, consumer.calls.Load(), "the consumer side consults no table")
		clock.Add(9 * time.Second)
		_, err = p.Send(t.Context(), queue.URL, job)
		var duplicate *producer.DuplicateJobError
		require.ErrorAs(t, err, &duplicate)
		assert.Equal(t, m1, duplicate.MessageID)
		clock.Add(5*time.Minute + time.Second - 10*time.Second)
		m2, err := p.Send(t.Context(), queue.URL, job)
		require.NoError(t, err, "free again once the window has ended")
		assert.NotEqual(t, m1, m2)
	})

	// (b) UntilDone: freed at once when m1 succeeds, and when it fails permanently into
	// the dead-letter queue; not freed by an ordinary (retryable) failure.
	for _, c := range []struct {
		name    string
		outcome error
		freed   bool
	}{
		{name: "UntilDone/success", outcome: nil, freed: true},
		{name: "UntilDone/dead-lettered", outcome: sqsworker.Permanent("Rejected", errors.New("rejected")), freed: true},
		{name: "UntilDone/retried", outcome: errors.New("try again"), freed: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			unique := newUniqueTable(t)
			p := newProducer(t, client, producer.Config{Unique: unique.store()})
			job := producer.Job{Body: "x", UniqueKey: "K", UniqueFor: 5 * time.Minute, UniqueMode: producer.UniqueUntilDone}
			m1, err := p.Send(t.Context(), queue.URL, job)
			require.NoError(t, err)
			handled := make(chan struct{}, 10)
			startPoller(t, client, queue.URL, sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				handled <- struct{}{}
				return c.outcome
			}), producer.UniqueMiddleware(unique.store(), nil)))
			testenv.Recv(t, handled, testenv.ReceiveTimeout, "m1 handled")
			if c.freed {
				testenv.Eventually(t, testenv.WaitTimeout, "the key is freed", func() bool { return unique.item(t, "unique#K") == nil })
				_, err = p.Send(t.Context(), queue.URL, job)
				require.NoError(t, err, "accepted at once")
				return
			}
			_, err = p.Send(t.Context(), queue.URL, job)
			var duplicate *producer.DuplicateJobError
			require.ErrorAs(t, err, &duplicate, "a retried job keeps its key")
			assert.Equal(t, m1, duplicate.MessageID)
		})
	}

	// UntilStarted: freed as the handler starts, so the next job is accepted while m1
	// still runs.
	t.Run("UntilStarted", func(t *testing.T) {
		t.Parallel()
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		unique := newUniqueTable(t)
		p := newProducer(t, client, producer.Config{Unique: unique.store()})
		job := producer.Job{Body: "x", UniqueKey: "K", UniqueFor: 5 * time.Minute, UniqueMode: producer.UniqueUntilStarted}
		_, err := p.Send(t.Context(), queue.URL, job)
		require.NoError(t, err)
		started, finish := make(chan struct{}), make(chan struct{})
		worker := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			close(started)
			<-finish
			return nil
		}), producer.UniqueMiddleware(unique.store(), nil))
		done := make(chan error, 1)
		message := receiveOne(t, client, queue.URL)
		go func() { done <- worker.Handle(t.Context(), message) }()
		testenv.Recv(t, started, testenv.WaitTimeout, "m1 started")
		_, err = p.Send(t.Context(), queue.URL, job)
		require.NoError(t, err, "accepted while m1 runs")
		close(finish)
		require.NoError(t, testenv.Recv(t, done, testenv.WaitTimeout, "m1 done"))
	})
}

// TestEmulatorUniqueReleaseNamesOnlyItsOwnKey (moto): whoever may send to the queue can
// put a unique-release attribute on a message. One naming another job's key without
// that job's owner token, or a malformed one, frees nothing; the handler runs as usual.
func TestEmulatorUniqueReleaseNamesOnlyItsOwnKey(t *testing.T) {
	t.Parallel()
	unique := newUniqueTable(t)
	p := newProducer(t, newCountingFake(), producer.Config{Unique: unique.store()})
	_, err := p.Send(t.Context(), "https://sqs.us-east-1.amazonaws.com/123456789012/jobs",
		producer.Job{Body: "x", UniqueKey: "victim", UniqueFor: time.Hour, UniqueMode: producer.UniqueUntilDone})
	require.NoError(t, err)
	held := unique.item(t, "unique#victim")
	require.NotNil(t, held)
	var calls atomic.Int64
	worker := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { calls.Add(1); return nil }),
		producer.UniqueMiddleware(unique.store(), nil))
	for _, value := range []string{
		"until-done:" + strings.Repeat("ab", 16) + ":victim", // a guessed token
		"until-started:" + strings.Repeat("00", 16) + ":victim",
		"until-done::victim", "until-done:zz:victim", "until-window-ends:" + strings.Repeat("ab", 16) + ":victim", "victim", "",
	} {
		message := &sqsworker.Message{ID: "hostile", Body: "x", MessageAttributes: map[string]sqsworker.MessageAttribute{
			producer.AttributeUniqueRelease: {DataType: "String", StringValue: value}}}
		require.NoError(t, worker.Handle(t.Context(), message))
	}
	assert.EqualValues(t, 7, calls.Load(), "every handler ran")
	assert.Equal(t, held, unique.item(t, "unique#victim"), "the victim's key is untouched")
}

// TestEmulatorRedrivenUniqueJobHandledOnce (LocalStack or ElasticMQ, moto; CASES.md
// N20 (c)): m1 (UntilWindowEnds) is dead-lettered, then an operator moves it back with
// SQS's native move task within the window. The redriven m1 is handled (once), not
// refused as a duplicate of itself: uniqueness is checked when a job is sent, and the
// consumer side consults no table. The key stays m1's.
func TestEmulatorRedrivenUniqueJobHandledOnce(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	unique := newUniqueTable(t)
	p := newProducer(t, client, producer.Config{Unique: unique.store()})
	job := producer.Job{Body: `{"order":42}`, UniqueKey: "K", UniqueFor: 5 * time.Minute}
	m1, err := p.Send(t.Context(), queue.URL, job)
	require.NoError(t, err)

	consumer := &countingDynamoDB{DynamoDBAPI: unique.client}
	var attempts, successes atomic.Int64
	fixed := atomic.Bool{}
	startPoller(t, client, queue.URL, sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		attempts.Add(1)
		if !fixed.Load() {
			return sqsworker.Permanent("Rejected", errors.New("the cause is not fixed yet"))
		}
		successes.Add(1)
		return nil
	}), producer.UniqueMiddleware(producer.NewDynamoDBUniqueStore(consumer, unique.name), nil)))
	testenv.Eventually(t, testenv.ReceiveTimeout, "m1 in the dead-letter queue", func() bool {
		visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible == 1
	})
	fixed.Store(true)
	// The runtime sent the dead letter itself, so the move names its destination.
	_, err = client.StartMessageMoveTask(t.Context(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(queue.DeadLetterQueueARN), DestinationArn: aws.String(queue.ARN)})
	require.NoError(t, err)
	testenv.Eventually(t, testenv.ReceiveTimeout, "the redriven m1 handled", func() bool { return successes.Load() == 1 })
	testenv.WaitQueueEmpty(t, client, queue.URL, 45*time.Second)
	assert.EqualValues(t, 2, attempts.Load(), "the dead-lettered attempt and the redriven one")
	assert.EqualValues(t, 1, successes.Load())
	assert.Zero(t, consumer.calls.Load(), "the consumer side consults no table")
	_, err = p.Send(t.Context(), queue.URL, job)
	var duplicate *producer.DuplicateJobError
	require.ErrorAs(t, err, &duplicate, "the window is not over: the key is still m1's")
	assert.Equal(t, m1, duplicate.MessageID)
}
