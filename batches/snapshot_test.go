package batches_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// shardReadsAPI records the keys read by GetItem and the TransactGetItems calls.
type shardReadsAPI struct {
	batches.API
	mu    sync.Mutex
	gets  []string
	snaps int
}

func (r *shardReadsAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.mu.Lock()
	r.gets = append(r.gets, idOf(in.Key))
	r.mu.Unlock()
	return r.API.GetItem(ctx, in, opts...)
}

func (r *shardReadsAPI) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	r.mu.Lock()
	r.snaps++
	r.mu.Unlock()
	return r.API.TransactGetItems(ctx, in, opts...)
}

// TestEmulatorFullCheckReadsOneSnapshot: the check of a sealed batch (here Seal's, with
// one job pending on one of 4 shards) reads the batch item and every shard in one
// TransactGetItems, never shard by shard: shards read one after another could show a
// child's shard before its count was raised and its parent's after the parent ended,
// and fire the callback while the child runs (seen once in a clean-clone run of
// TestEmulatorChildKeepsBatchOpen, when Seal's check read the shards that way).
func TestEmulatorFullCheckReadsOneSnapshot(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	reads := &shardReadsAPI{API: db}
	b, err := batches.New(reads, &nullSender{unique: map[string]string{}}, batches.Config{Table: testenv.NewTable(t, db), Shards: 4})
	require.NoError(t, err)
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: producer.Job{Type: "done", Body: "done"}}})
	require.NoError(t, err)
	_, err = batch.Add(ctx, "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobsOf(1, nil)...)
	require.NoError(t, err)
	reads.mu.Lock()
	reads.gets, reads.snaps = nil, 0
	reads.mu.Unlock()

	require.NoError(t, batch.Seal(ctx))
	reads.mu.Lock()
	snaps, gets := reads.snaps, reads.gets
	reads.mu.Unlock()
	assert.Equal(t, 1, snaps, "one snapshot of the batch item and its shards")
	for _, key := range gets {
		assert.False(t, strings.HasPrefix(key, "batch#shard#"), "no shard read on its own: %s", key)
	}
	status, err := b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 1, Pending: 1}, status.Counts)
	assert.True(t, status.Success.FiredAt.IsZero())
}
