package outboxdynamo_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
)

// lostClaimAnswers is a DynamoDB client whose claim writes are each made twice and
// answered with the second result: what the relay sees when DynamoDB applied a claim,
// its answer was lost and the SDK retried it (seen on a loaded moto).
type lostClaimAnswers struct {
	*dynamodb.Client
	retried atomic.Int64
}

func (c *lostClaimAnswers) UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !strings.HasPrefix(aws.ToString(input.UpdateExpression), "SET #c = :until, #t = :t") {
		return c.Client.UpdateItem(ctx, input, optFns...)
	}
	if _, err := c.Client.UpdateItem(ctx, input, optFns...); err != nil {
		return nil, err
	}
	c.retried.Add(1)
	return c.Client.UpdateItem(ctx, input, optFns...)
}

// A claim whose first attempt was applied and whose answer was lost meets its own
// result on the SDK's retry: the entries are this claim's, not another relay's, so they
// are sent now rather than after the claim's lease (a minute by default). Failed once in
// CI as TestSweeperPublishesWhatTheStreamMissed waiting 30 s for its ten entries.
func TestClaimRetriedAfterALostAnswerIsTaken(t *testing.T) {
	t.Parallel()
	h := newDynamoSuite(t)
	entries := h.Commit(t, "https://sqs.us-east-1.amazonaws.com/000000000000/q", outboxtest.Job(1), outboxtest.Job(2), outboxtest.Job(3))
	api := &lostClaimAnswers{Client: h.client}
	store := outboxdynamo.NewStore(api, h.outbox, time.Minute)

	claim, err := store.Claim(context.Background(), 10, 0)
	require.NoError(t, err)
	var claimed []string
	for _, c := range claim.Entries() {
		claimed = append(claimed, c.Entry.ID)
	}
	assert.Equal(t, int64(3), api.retried.Load(), "every claim write was retried after its own success")
	assert.ElementsMatch(t, outboxtest.IDs(entries), claimed, "the entries are this claim's")
	claim.Release(context.Background())

	// Released, so another claim takes them at once.
	again, err := outboxdynamo.NewStore(h.client, h.outbox, time.Minute).Claim(context.Background(), 10, 0)
	require.NoError(t, err)
	assert.Len(t, again.Entries(), 3, "released entries are claimable again")
	again.Release(context.Background())
}
