package batches_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// conflictingAPI answers the first conflicts calls of each write kind as DynamoDB does
// when a concurrent transaction holds an item (TransactionCanceledException with reason
// TransactionConflict; TransactionConflictException for a single-item write), without
// writing, then passes calls on.
type conflictingAPI struct {
	batches.API
	mu        sync.Mutex
	conflicts map[string]int
}

func (c *conflictingAPI) conflict(op string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conflicts[op] > 0 {
		c.conflicts[op]--
		return true
	}
	return false
}

func (c *conflictingAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.conflict("TransactWriteItems") {
		reasons := make([]dbtypes.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[len(reasons)-1].Code = aws.String("TransactionConflict")
		return nil, &dbtypes.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
	}
	return c.API.TransactWriteItems(ctx, in, opts...)
}

func (c *conflictingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.conflict("UpdateItem") {
		return nil, &dbtypes.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
	return c.API.UpdateItem(ctx, in, opts...)
}

// TestEmulatorConflictsAreRetried: writes that meet a concurrent transaction (three in a
// row for each kind of write) are retried by the package: Add, Seal and both job ends
// succeed, each end counted once, and success is sent once.
func TestEmulatorConflictsAreRetried(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	api := &conflictingAPI{API: db, conflicts: map[string]int{}}
	sender := &nullSender{unique: map[string]string{}}
	b, err := batches.New(api, sender, batches.Config{Table: testenv.NewTable(t, db)})
	require.NoError(t, err)
	ctx := context.Background()
	batch, err := b.Open(ctx, batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: producer.Job{Type: "done", Body: "done"}}})
	require.NoError(t, err)
	api.conflicts["UpdateItem"] = 3
	_, err = batch.Add(ctx, "https://sqs.us-east-1.amazonaws.com/000000000000/jobs", jobsOf(2, nil)...)
	require.NoError(t, err)
	api.conflicts["UpdateItem"] = 3
	require.NoError(t, batch.Seal(ctx))
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), b.Middleware(batches.MiddlewareConfig{}))
	for _, job := range append([]producer.Prepared(nil), sender.prepared...) {
		api.conflicts["TransactWriteItems"] = 3
		require.NoError(t, handler.Handle(ctx, message(job, 1)))
	}
	status, err := b.Get(ctx, batch.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 2, Succeeded: 2}, status.Counts)
	assert.False(t, status.Success.FiredAt.IsZero())
	assert.Len(t, sender.prepared, 3, "two jobs and one callback")
}
