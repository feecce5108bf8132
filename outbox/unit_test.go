package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

func TestTransactItemsRefusesMoreThanDynamoDBsLimit(t *testing.T) {
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox"})
	require.NoError(t, err)
	business := make([]dynamodbtypes.TransactWriteItem, 98)
	items, entries, err := o.TransactItems(business, "https://sqs.example/1/q", webhookJob(1), webhookJob(2))
	require.NoError(t, err)
	assert.Len(t, items, 100)
	assert.Len(t, entries, 2)
	assert.Equal(t, "outbox", aws.ToString(items[99].Put.TableName))

	_, _, err = o.TransactItems(business, "https://sqs.example/1/q", webhookJob(1), webhookJob(2), webhookJob(3))
	require.ErrorIs(t, err, ErrTooManyItems)
	assert.Contains(t, err.Error(), "98 business items and 3 outbox entries are 101, DynamoDB allows 100")
}

func TestEntryChecksTheJobBeforeTheTransaction(t *testing.T) {
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox"})
	require.NoError(t, err)
	fifo := "https://sqs.example/1/q.fifo"
	for name, job := range map[string]producer.Job{
		"no group on FIFO": {Type: "x", Body: "{}"},
		"delay on FIFO":    {Type: "x", Body: "{}", GroupID: "g", Delay: time.Second},
		"both bodies":      {Type: "x", Body: "{}", Payload: 1, GroupID: "g"},
		"unique mode":      {Type: "x", Body: "{}", GroupID: "g", UniqueKey: "k", UniqueMode: producer.UniqueUntilDone},
	} {
		_, _, err := o.Put(fifo, job)
		assert.Error(t, err, name)
	}
	_, entry, err := o.Put(fifo, producer.Job{Type: "x", Payload: map[string]int{"a": 1}, GroupID: "g"})
	require.NoError(t, err)
	assert.Len(t, entry.ID, 32)
	job := entry.Job
	assert.Equal(t, entry.ID, job.DeduplicationID, "the entry id is the FIFO deduplication id")
	assert.Equal(t, entry.ID, job.IdempotencyKey())
	assert.Equal(t, entry.ID, aws.ToString(job.Attributes[AttributeOutboxID].StringValue))
	assert.Equal(t, `{"a":1}`, job.Body)

	_, own, err := o.Put(fifo, producer.Job{Body: "{}", GroupID: "g", UniqueKey: "order-7", IdempotencyKey: "mine"})
	require.NoError(t, err)
	assert.Equal(t, "order-7", own.Job.DeduplicationID, "a unique key is the FIFO deduplication id, as the producer sends it")
	assert.Equal(t, "mine", own.Job.IdempotencyKey())
}

// A unique job's send that finds its key held (a relay re-sending after it died before
// its mark, or a real duplicate) publishes the entry with the holder's message id; an
// unconfirmed holder makes it wait for a retry.
func TestClassifyPublishesADuplicateUniqueJob(t *testing.T) {
	held := classify(producer.Result{Err: &producer.DuplicateJobError{Key: "k", MessageID: "m-1"}})
	assert.True(t, held.published())
	assert.Equal(t, "m-1", held.messageID)
	pending := classify(producer.Result{Err: &producer.DuplicateJobError{Key: "k", Pending: true}})
	assert.Error(t, pending.retry)
	unconfirmed := classify(producer.Result{MessageID: "m-2", Err: fmt.Errorf("%w: timeout", producer.ErrUniqueNotConfirmed)})
	assert.True(t, unconfirmed.published())
	assert.Equal(t, "m-2", unconfirmed.messageID)
	noStore := classify(producer.Result{Err: producer.ErrNoUniqueStore})
	assert.ErrorIs(t, noStore.refused, ErrRefused)
}

// countingSQS answers every call itself, fails the sends of bodies in failBodies (on
// SQS's side: retried, then given up), and records every sent body per call.
type countingSQS struct {
	failBodies map[string]bool
	calls      [][]string
}

func (c *countingSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.calls = append(c.calls, []string{aws.ToString(in.MessageBody)})
	if c.failBodies[aws.ToString(in.MessageBody)] {
		return nil, &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: errors.New("service unavailable")}
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

func (c *countingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	var bodies []string
	for _, e := range in.Entries {
		bodies = append(bodies, aws.ToString(e.MessageBody))
		if c.failBodies[aws.ToString(e.MessageBody)] {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: false})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.MessageBody))})
	}
	c.calls = append(c.calls, bodies)
	return out, nil
}

func (c *countingSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": "262144"}}, nil
}

func fifoEntries(t *testing.T, groups ...string) []Entry {
	var entries []Entry
	for i, g := range groups {
		e, err := NewEntry("https://sqs.example/1/q.fifo", producer.Job{Body: g + "-" + strconv.Itoa(i), GroupID: g}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	return entries
}

func TestPublishSendsAGroupOncePerCallAndStopsAGroupAtItsFirstUnsentEntry(t *testing.T) {
	api := &countingSQS{failBodies: map[string]bool{"a-2": true}}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	entries := fifoEntries(t, "a", "b", "a", "b", "a", "c")
	outcomes := publish(context.Background(), p, entries, nil)

	for _, call := range api.calls {
		seen := map[string]bool{}
		for _, body := range call {
			group := strings.SplitN(body, "-", 2)[0]
			assert.False(t, seen[group], "one entry per group per call: %v", call)
			seen[group] = true
		}
	}
	assert.True(t, outcomes[0].published())
	assert.True(t, outcomes[1].published())
	assert.Error(t, outcomes[2].retry, "a-2 failed on SQS's side")
	assert.True(t, outcomes[3].published())
	assert.ErrorContains(t, outcomes[4].held, `an earlier entry of message group "a" was not sent`)
	assert.True(t, outcomes[5].published())
	for _, call := range api.calls {
		assert.NotContains(t, call, "a-4", "a-4 is never sent while a-2 is unsent")
	}
}

func TestPublishBatchesStandardEntriesByTen(t *testing.T) {
	api := &countingSQS{}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	var entries []Entry
	for i := range 25 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	for _, o := range publish(context.Background(), p, entries, nil) {
		assert.True(t, o.published())
	}
	require.Len(t, api.calls, 3)
	assert.Len(t, api.calls[0], 10)
	assert.Len(t, api.calls[2], 5)
}

func TestRefusedTellsTheEntrysFaultFromTransientOnes(t *testing.T) {
	assert.True(t, refused(&producer.TooLargeError{Size: 2, Limit: 1}))
	assert.True(t, refused(errors.New("producer: the job has 11 message attributes")))
	assert.False(t, refused(context.DeadlineExceeded))
}

func TestShardsKeepAGroupOnOneShard(t *testing.T) {
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox", Shards: 8})
	require.NoError(t, err)
	shards := map[string]bool{}
	for _, e := range fifoEntries(t, "a", "a", "a", "a") {
		shards[o.shardOf(e)] = true
	}
	assert.Len(t, shards, 1, "one group, one shard")
	spread := map[string]bool{}
	for i := range 200 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		spread[o.shardOf(e)] = true
	}
	assert.Len(t, spread, 8, "entries without a group spread over every shard")
}

// A call of which every entry failed on SQS's side ends the queue's sends for the cycle:
// 25 entries, only the first call's 10 are sent (the producer retries them one by one),
// and every entry is an attempt with that call's error.
func TestPublishStopsCallingAQueueWhoseWholeCallFailed(t *testing.T) {
	api := &countingSQS{failBodies: map[string]bool{}}
	var entries []Entry
	for i := range 25 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
		api.failBodies[strconv.Itoa(i)] = true
	}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	outcomes := publish(context.Background(), p, entries, nil)
	for _, call := range api.calls {
		for _, body := range call {
			n, _ := strconv.Atoi(body)
			assert.Less(t, n, 10, "entry %s sent after its queue's whole call failed", body)
		}
	}
	for _, o := range outcomes {
		assert.Error(t, o.retry)
	}
	assert.ErrorContains(t, outcomes[24].retry, "an earlier call to https://sqs.example/1/q failed in this cycle")
}
