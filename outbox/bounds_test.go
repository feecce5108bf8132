package outbox

import (
	"context"
	"hash/fnv"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// Both stores keep the job's prepared form as it is: every option the producer knows
// (here a unique key, a binary attribute and a delay past the old whole-second column)
// comes back unchanged.
func TestStoresKeepThePreparedJobAsItIs(t *testing.T) {
	t.Parallel()
	queue := "https://sqs.example/1/q"
	job := producer.Job{
		Type: "report", Body: "{}", Delay: math.MaxInt32*time.Second + 1500*time.Millisecond,
		UniqueKey: "report-11", UniqueFor: math.MaxInt32*time.Second + 2*time.Second, UniqueMode: producer.UniqueUntilDone,
		Attributes: map[string]sqstypes.MessageAttributeValue{"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}}},
	}
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox"})
	require.NoError(t, err)
	put, entry, err := o.Put(queue, job)
	require.NoError(t, err)
	it, ok := decodeEntry(sdkGetter(put.Put.Item))
	require.True(t, ok)
	require.NoError(t, it.damage)
	assert.Equal(t, entry.Job, it.entry.Job)
	assert.Equal(t, "report", it.entry.Type)

	h := newPostgresHarness(t)
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	entries, err := h.outbox.Enqueue(ctx, tx, queue, job)
	require.NoError(t, err)
	read, err := listEntries(ctx, tx, "entry", `SELECT `+entryColumns+` FROM sqsworker_outbox WHERE id = $1`, entries[0].ID)
	require.NoError(t, err)
	require.Len(t, read, 1)
	assert.Equal(t, entries[0].Job, read[0].Job)
	assert.Equal(t, entry.Job.Delay, read[0].Job.Delay)
}

// limitRecorder records the Limit of every Query.
type limitRecorder struct {
	DynamoDBAPI
	limits []int32
}

func (l *limitRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if in.Limit != nil {
		l.limits = append(l.limits, *in.Limit)
	}
	return l.DynamoDBAPI.Query(ctx, in, opts...)
}

// A listing limit above what a Query's 32-bit Limit holds reads pages of at most 1000
// items instead of sending a wrapped-around Limit (int32(math.MaxInt) is -1, which
// DynamoDB rejects: Limit must be at least 1).
func TestDynamoDBListingTakesAnyLimit(t *testing.T) {
	t.Parallel()
	h := newDynamoHarness(t)
	damaged := h.plantDamaged(t, "https://sqs.example/1/q")
	api := &limitRecorder{DynamoDBAPI: h.client}
	entries, err := h.outbox.query(context.Background(), api, pendingPrefix+"0", math.MaxInt)
	require.NoError(t, err)
	assert.Equal(t, []string{damaged}, ids(entries))
	_, err = h.outbox.Failed(context.Background(), api, math.MaxInt)
	require.NoError(t, err)
	require.NotEmpty(t, api.limits)
	for _, limit := range api.limits {
		assert.True(t, limit >= 1 && limit <= maxQueryPage, "Query Limit %d", limit)
	}
}

// The shard of a group is the one earlier versions computed (FNV-1a 32 modulo the
// shards), so entries written before an upgrade stay on their group's shard.
func TestShardOfKeepsItsMapping(t *testing.T) {
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox", Shards: 7})
	require.NoError(t, err)
	for i := range 100 {
		group := "customer-" + strconv.Itoa(i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(group))
		want := pendingPrefix + strconv.Itoa(int(h.Sum32()%7))
		assert.Equal(t, want, o.shardOf(Entry{ID: "x", GroupID: group}))
	}
}
