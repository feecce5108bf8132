package fleetlimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/table"
)

// countingAPI counts the DynamoDB calls made through it.
type countingAPI struct {
	table.API
	calls atomic.Int64
	// refused counts the calls whose condition failed: with no other writer, only a write
	// the SDK retried after its first attempt had taken effect (moto's lost answers,
	// localstack/README.md), each of which may cost the caller one more call.
	refused atomic.Int64
}

func (c *countingAPI) UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.calls.Add(1)
	out, err := c.API.UpdateItem(ctx, input, optFns...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		c.refused.Add(1)
	}
	return out, err
}

func (c *countingAPI) GetItem(ctx context.Context, input *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.calls.Add(1)
	return c.API.GetItem(ctx, input, optFns...)
}

func (c *countingAPI) PutItem(ctx context.Context, input *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls.Add(1)
	out, err := c.API.PutItem(ctx, input, optFns...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		c.refused.Add(1)
	}
	return out, err
}

func (c *countingAPI) DeleteItem(ctx context.Context, input *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.calls.Add(1)
	return c.API.DeleteItem(ctx, input, optFns...)
}

func newLimiter(t testing.TB, api table.API, config fleetlimit.Config) *fleetlimit.Limiter {
	t.Helper()
	limiter, err := fleetlimit.New(api, config)
	require.NoError(t, err)
	return limiter
}

// Forty workers race for 3 permits at once (moto): exactly 3 win, each of a distinct
// slot, whatever the order of their conditional writes; the rest are told busy. A
// released permit is taken again, with a higher fencing token.
func TestAcquireRaceGivesExactlyTheLimit(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	name := testenv.NewTable(t, client)
	var limiters []*fleetlimit.Limiter
	for range 4 {
		limiters = append(limiters, newLimiter(t, client, fleetlimit.Config{Table: name, Name: "api", Concurrency: 3, Lease: 10 * time.Second}))
	}
	var mu sync.Mutex
	var permits []*fleetlimit.Permit
	var busy atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			permit, err := limiters[i%4].Acquire(context.Background(), "tenant-1")
			if _, ok := errors.AsType[*fleetlimit.BusyError](err); ok {
				busy.Add(1)
				return
			}
			require.NoError(t, err)
			mu.Lock()
			permits = append(permits, permit)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, permits, 3, "exactly the limit")
	assert.EqualValues(t, 37, busy.Load())
	tokens := map[int64]bool{}
	for _, permit := range permits {
		tokens[permit.Token] = true
	}
	assert.Len(t, tokens, 3, "distinct fencing tokens")

	_, err := limiters[0].Acquire(context.Background(), "tenant-2")
	require.NoError(t, err, "another key has its own permits")
	require.NoError(t, permits[0].Release(context.Background()))
	again, err := limiters[1].Acquire(context.Background(), "tenant-1")
	require.NoError(t, err, "a released permit is free again")
	assert.Greater(t, again.Token, max(permits[0].Token, permits[1].Token, permits[2].Token), "the fencing token grows")
	require.NoError(t, permits[0].Release(context.Background()), "releasing twice is harmless")
	_, err = limiters[2].Acquire(context.Background(), "tenant-1")
	_, isBusy := errors.AsType[*fleetlimit.BusyError](err)
	assert.True(t, isBusy, "the second release did not free the slot its new holder has: %v", err)
}

// A limit of more permits than one item holds is spread over shards; together they
// still give exactly the limit.
func TestAcquireShardedGivesExactlyTheLimit(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	name := testenv.NewTable(t, client)
	// A lease far longer than the test: the permits are never renewed here, and with the
	// default 30 s a loaded machine (45 s for this loop, seen once) let the first ones
	// expire and be taken again, which the count below would take for too many.
	limiter := newLimiter(t, client, fleetlimit.Config{Table: name, Name: "wide", Concurrency: fleetlimit.SlotsPerItem + 4, Lease: time.Hour})
	held := 0
	shards := map[int]int{}
	// Sequential acquisitions find free slots from what each failed write returns; with
	// three writes each, a few may report busy while the other shard has room.
	for range 3 * (fleetlimit.SlotsPerItem + 4) {
		permit, err := limiter.Acquire(context.Background(), "k")
		if _, ok := errors.AsType[*fleetlimit.BusyError](err); ok {
			continue
		}
		require.NoError(t, err)
		held++
		shards[permit.Shard]++
	}
	assert.Equal(t, fleetlimit.SlotsPerItem+4, held, "never more than the limit")
	assert.Equal(t, map[int]int{0: fleetlimit.SlotsPerItem, 1: 4}, shards)
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	for name, config := range map[string]fleetlimit.Config{
		"no table":        {Name: "a", Concurrency: 1},
		"# in name":       {Table: "t", Name: "a#b", Concurrency: 1},
		"no limit":        {Table: "t", Name: "a"},
		"negative":        {Table: "t", Name: "a", Concurrency: -1},
		"burst alone":     {Table: "t", Name: "a", Concurrency: 1, Burst: 2},
		"short lease":     {Table: "t", Name: "a", Concurrency: 1, Lease: time.Millisecond},
		"count no hopper": {Table: "t", Name: "a", Concurrency: 1, MaxReceiveCount: 5},
	} {
		_, err := fleetlimit.New(client, config)
		assert.Error(t, err, name)
	}
}

// retryingAPI runs the first UpdateItem twice and answers with the second result, as
// the SDK's retry of a write whose answer was lost does.
type retryingAPI struct {
	table.API
	retried atomic.Bool
}

func (r *retryingAPI) UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if r.retried.CompareAndSwap(false, true) {
		if _, err := r.API.UpdateItem(ctx, input, optFns...); err != nil {
			return nil, err
		}
	}
	return r.API.UpdateItem(ctx, input, optFns...)
}

// A take whose first attempt succeeded but whose answer was lost finds the slot held by
// its own acquisition and keeps it: the retry neither fails nor takes a second permit.
func TestRetriedAcquireKeepsOnePermit(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	name := testenv.NewTable(t, client)
	limiter := newLimiter(t, &retryingAPI{API: client}, fleetlimit.Config{Table: name, Name: "retry", Concurrency: 2})
	first, err := limiter.Acquire(context.Background(), "k")
	require.NoError(t, err)
	second, err := limiter.Acquire(context.Background(), "k")
	require.NoError(t, err, "the retry left the other permit free")
	_, err = limiter.Acquire(context.Background(), "k")
	_, busy := errors.AsType[*fleetlimit.BusyError](err)
	assert.True(t, busy, "two permits, two holders: %v", err)
	require.NoError(t, first.Release(context.Background()))
	require.NoError(t, second.Release(context.Background()))
	_, err = limiter.Acquire(context.Background(), "k")
	require.NoError(t, err, "both released")
}
