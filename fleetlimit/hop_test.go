package fleetlimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/table"
)

type recordingHopper struct{ hops []*sqsworker.Message }

func (h *recordingHopper) Hop(_ context.Context, message *sqsworker.Message, remaining time.Duration) error {
	h.hops = append(h.hops, message)
	return nil
}

// A message that finds its key busy is deferred (counted as deferred, not failed)
// while the redrive policy leaves it receives; at its last receive but one it is re-sent
// through the Hopper, carrying its receives so far, and the original is deleted. FIFO
// messages are never re-sent.
func TestBusyDefersThenHopsBeforeTheRedriveBudgetIsSpent(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	hopper := &recordingHopper{}
	limiter := newLimiter(t, client, fleetlimit.Config{Table: tableName, Name: "hop", Concurrency: 1, Hopper: hopper, MaxReceiveCount: 5})
	_, err := limiter.Acquire(context.Background(), "all")
	require.NoError(t, err)
	ran := false
	handler := limiter.Middleware()(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { ran = true; return nil }))
	queue := "http://127.0.0.1:4566/000000000000/jobs"

	for receives := 1; receives <= 3; receives++ {
		err := handler.Handle(context.Background(), &sqsworker.Message{ID: "m", QueueURL: queue, ReceiveCount: receives})
		outcome := sqsworker.Classify(err)
		assert.Equal(t, sqsworker.OutcomeDefer, outcome.Kind, "receive %d: deferred", receives)
		assert.False(t, outcome.Failed())
		assert.Equal(t, fleetlimit.ReasonBusy, outcome.Reason)
	}
	assert.Empty(t, hopper.hops)

	hoppedBefore := &sqsworker.Message{ID: "m", QueueURL: queue, ReceiveCount: 4, MessageAttributes: map[string]sqsworker.MessageAttribute{
		fleetlimit.AttributePriorReceives: {DataType: "Number", StringValue: "6"},
	}}
	require.NoError(t, handler.Handle(context.Background(), hoppedBefore), "re-sent: the original is deleted")
	require.Len(t, hopper.hops, 1)
	assert.Equal(t, 10, fleetlimit.PriorReceives(hopper.hops[0]), "6 before the last hop and 4 of this copy")
	assert.Equal(t, "6", hoppedBefore.MessageAttributes[fleetlimit.AttributePriorReceives].StringValue, "the received message is unchanged")

	err = handler.Handle(context.Background(), &sqsworker.Message{ID: "f", QueueURL: queue + ".fifo", GroupID: "g", ReceiveCount: 4})
	_, deferred := errors.AsType[*sqsworker.DeferError](err)
	assert.True(t, deferred, "a FIFO message is deferred, never re-sent out of its group's order: %v", err)
	assert.Len(t, hopper.hops, 1)
	assert.False(t, ran, "the handler never ran without the permit")
	assert.Zero(t, fleetlimit.PriorReceives(&sqsworker.Message{}))
}

// A handler whose permit was taken from it (here: the item deleted, as another holder
// would overwrite an expired slot) has its context cancelled with ErrPermitLost at the
// next renewal; its fencing token was in its context.
func TestLostPermitCancelsTheHandler(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	limiter := newLimiter(t, client, fleetlimit.Config{Table: tableName, Name: "lost", Concurrency: 1, Lease: fleetlimit.MinLease})
	var cause error
	var token int64
	handler := limiter.Middleware()(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		permit, ok := fleetlimit.PermitFromContext(ctx)
		require.True(t, ok)
		token = permit.Token
		key, err := table.LimitPermitsKey("lost", 0, "all")
		require.NoError(t, err)
		// The test's own call, not the handler's: on a slow emulator the handler's context
		// may end first, and the item must still go.
		_, err = client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(tableName), Key: table.KeyAttribute(key)})
		require.NoError(t, err)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ctx.Err()
	}))
	require.Error(t, handler.Handle(context.Background(), &sqsworker.Message{ID: "m"}))
	assert.ErrorIs(t, cause, fleetlimit.ErrPermitLost)
	assert.EqualValues(t, 1, token, "the first permit of the item")
}
