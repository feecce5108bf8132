package outbox

import (
	"context"
	"hash/fnv"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// A delay that does not fit the stored whole seconds (a 32-bit integer column) is
// refused when the job is written, on both stores, instead of wrapping around.
func TestDelayBeyondMaxDelayIsRefused(t *testing.T) {
	t.Parallel()
	o, err := NewDynamoDB(DynamoDBConfig{Table: "outbox"})
	require.NoError(t, err)
	queue := "https://sqs.example/1/q"
	_, entry, err := o.Put(queue, producer.Job{Body: "{}", Delay: MaxDelay})
	require.NoError(t, err)
	assert.Equal(t, MaxDelay, entry.Delay)
	_, _, err = o.Put(queue, producer.Job{Body: "{}", Delay: MaxDelay + time.Second})
	require.ErrorContains(t, err, "outside 0 to")

	h := newPostgresHarness(t)
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = h.outbox.Enqueue(ctx, tx, queue, producer.Job{Body: "{}", Delay: math.MaxInt32*time.Second + time.Second})
	require.ErrorContains(t, err, "outside 0 to")
	entries, err := h.outbox.Enqueue(ctx, tx, queue, producer.Job{Body: "{}", Delay: MaxDelay})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	var stored int64
	require.NoError(t, h.pool.QueryRow(ctx, "SELECT delay_seconds FROM sqsworker_outbox WHERE id = $1", entries[0].ID).Scan(&stored))
	assert.Equal(t, int64(math.MaxInt32), stored)
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
