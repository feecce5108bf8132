package outboxdynamo_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
)

// A claim whose first attempt was applied and whose answer was lost meets its own
// result on the SDK's retry: the entries are this claim's, not another relay's, so they
// are sent now rather than after the claim's lease (a minute by default). Failed once in
// CI as TestSweeperPublishesWhatTheStreamMissed waiting 30 s for its ten entries.
func TestClaimRetriedAfterALostAnswerIsTaken(t *testing.T) {
	t.Parallel()
	h := newDynamoSuite(t)
	entries := h.Commit(t, "https://sqs.us-east-1.amazonaws.com/000000000000/q", outboxtest.Job(1), outboxtest.Job(2), outboxtest.Job(3))
	// Every claim write is applied and its answer lost; the SDK's retry meets the claim.
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"UpdateItem"}, RequestContains: "SET #c = :until, #t = :t", FirstAttempts: true, Fraction: 1, Reset: true})
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxy.URL) })
	store := outboxdynamo.NewStore(client, h.outbox, time.Minute)

	claim, err := store.Claim(context.Background(), 10, 0)
	require.NoError(t, err)
	var claimed []string
	for _, c := range claim.Entries() {
		claimed = append(claimed, c.Entry.ID)
	}
	var resets, retries int
	for _, call := range proxy.Calls() {
		if call.Operation == "UpdateItem" && call.Fault == "reset" {
			resets++
		}
		if call.Operation == "UpdateItem" && call.Attempt == 2 && call.Fault == "" {
			retries++
		}
	}
	assert.Equal(t, 3, resets, "every claim write lost its first answer")
	assert.Equal(t, 3, retries, "and the SDK retried it")
	assert.ElementsMatch(t, outboxtest.IDs(entries), claimed, "the entries are this claim's")
	claim.Release(context.Background())

	// Released, so another claim takes them at once.
	again, err := outboxdynamo.NewStore(h.client, h.outbox, time.Minute).Claim(context.Background(), 10, 0)
	require.NoError(t, err)
	assert.Len(t, again.Entries(), 3, "released entries are claimable again")
	again.Release(context.Background())
}
