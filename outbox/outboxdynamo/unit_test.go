package outboxdynamo

import (
	"context"
	"hash/fnv"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

// The store keeps the job's prepared form as it is: every option the producer knows
// (here a unique key, a binary attribute and a delay past the old whole-second column)
// comes back unchanged.
func TestKeepsThePreparedJobAsItIs(t *testing.T) {
	queue := "https://sqs.example/1/q"
	job := producer.Job{
		Type: "report", Body: "{}", Delay: math.MaxInt32*time.Second + 1500*time.Millisecond,
		UniqueKey: "report-11", UniqueFor: math.MaxInt32*time.Second + 2*time.Second, UniqueMode: producer.UniqueUntilDone,
		Attributes: map[string]sqstypes.MessageAttributeValue{"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}}},
	}
	o, err := New(Config{Table: "outbox"})
	require.NoError(t, err)
	put, entry, err := o.Put(queue, job)
	require.NoError(t, err)
	it, ok := decodeEntry(sdkGetter(put.Put.Item))
	require.True(t, ok)
	require.NoError(t, it.damage)
	assert.Equal(t, entry.Job, it.entry.Job)
	assert.Equal(t, "report", it.entry.Type)

}

func TestTransactItemsRefusesMoreThanDynamoDBsLimit(t *testing.T) {
	o, err := New(Config{Table: "outbox"})
	require.NoError(t, err)
	business := make([]dynamodbtypes.TransactWriteItem, 98)
	items, entries, err := o.TransactItems(business, "https://sqs.example/1/q", outboxtest.Job(1), outboxtest.Job(2))
	require.NoError(t, err)
	assert.Len(t, items, 100)
	assert.Len(t, entries, 2)
	assert.Equal(t, "outbox", aws.ToString(items[99].Put.TableName))

	_, _, err = o.TransactItems(business, "https://sqs.example/1/q", outboxtest.Job(1), outboxtest.Job(2), outboxtest.Job(3))
	require.ErrorIs(t, err, ErrTooManyItems)
	assert.Contains(t, err.Error(), "98 business items and 3 outbox entries are 101, DynamoDB allows 100")
}

func TestEntryChecksTheJobBeforeTheTransaction(t *testing.T) {
	o, err := New(Config{Table: "outbox"})
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
	assert.Equal(t, entry.ID, aws.ToString(job.Attributes[outbox.AttributeOutboxID].StringValue))
	assert.Equal(t, `{"a":1}`, job.Body)

	_, own, err := o.Put(fifo, producer.Job{Body: "{}", GroupID: "g", UniqueKey: "order-7", IdempotencyKey: "mine"})
	require.NoError(t, err)
	assert.Equal(t, "order-7", own.Job.DeduplicationID, "a unique key is the FIFO deduplication id, as the producer sends it")
	assert.Equal(t, "mine", own.Job.IdempotencyKey())
}

func TestShardsKeepAGroupOnOneShard(t *testing.T) {
	o, err := New(Config{Table: "outbox", Shards: 8})
	require.NoError(t, err)
	shards := map[string]bool{}
	for i := range 4 {
		e, err := outbox.NewEntry("https://sqs.example/1/q.fifo", outboxtest.GroupJob("a", i), time.Now())
		require.NoError(t, err)
		shards[o.shardOf(e)] = true
	}
	assert.Len(t, shards, 1, "one group, one shard")
	spread := map[string]bool{}
	for i := range 200 {
		e, err := outbox.NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		spread[o.shardOf(e)] = true
	}
	assert.Len(t, spread, 8, "entries without a group spread over every shard")
}

// limitRecorder records the Limit of every Query.
type limitRecorder struct {
	API
	limits []int32
}

func (l *limitRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if in.Limit != nil {
		l.limits = append(l.limits, *in.Limit)
	}
	return l.API.Query(ctx, in, opts...)
}

// A listing limit above what a Query's 32-bit Limit holds reads pages of at most 1000
// items instead of sending a wrapped-around Limit (int32(math.MaxInt) is -1, which
// DynamoDB rejects: Limit must be at least 1).
func TestDynamoDBListingTakesAnyLimit(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	o, err := New(Config{Table: testenv.UniqueName(t)})
	require.NoError(t, err)
	_, err = client.CreateTable(context.Background(), o.CreateTableInput())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(o.Table())})
	})
	_, entries, err := o.TransactItems(nil, "https://sqs.example/1/q", outboxtest.Job(1))
	require.NoError(t, err)
	_, err = client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(o.Table()), Item: must(o.item(entries[0]))})
	require.NoError(t, err)
	api := &limitRecorder{API: client}
	listed, err := o.query(context.Background(), api, pendingPrefix+"0", math.MaxInt)
	require.NoError(t, err)
	assert.Equal(t, outboxtest.IDs(entries), outboxtest.IDs(listed))
	_, err = o.Failed(context.Background(), api, math.MaxInt)
	require.NoError(t, err)
	require.NotEmpty(t, api.limits)
	for _, limit := range api.limits {
		assert.True(t, limit >= 1 && limit <= maxQueryPage, "Query Limit %d", limit)
	}
}

// The shard of a group is the one earlier versions computed (FNV-1a 32 modulo the
// shards), so entries written before an upgrade stay on their group's shard.
func TestShardOfKeepsItsMapping(t *testing.T) {
	o, err := New(Config{Table: "outbox", Shards: 7})
	require.NoError(t, err)
	for i := range 100 {
		group := "customer-" + strconv.Itoa(i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(group))
		want := pendingPrefix + strconv.Itoa(int(h.Sum32()%7))
		assert.Equal(t, want, o.shardOf(outbox.Entry{ID: "x", GroupID: group}))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
