package outboxdynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

func TestStorePassesTheSuite(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outboxtest.Harness { return newDynamoSuite(t) })
}

// dynamoSuite is the DynamoDB store (moto) as the conformance suite drives it: entries
// committed with an order item of a business table by TransactWriteItems.
type dynamoSuite struct {
	client *dynamodb.Client
	outbox *outboxdynamo.Outbox
	orders string // the business table
}

func newDynamoSuite(t *testing.T) *dynamoSuite {
	client := testenv.DynamoDB(t)
	return &dynamoSuite{client: client, outbox: newTable(t, client, outboxdynamo.Config{}), orders: testenv.NewTable(t, client)}
}

// newTable creates a uniquely named outbox table (with its index and stream) of config
// and deletes it when the test ends.
func newTable(t *testing.T, client *dynamodb.Client, config outboxdynamo.Config) *outboxdynamo.Outbox {
	t.Helper()
	config.Table = testenv.UniqueName(t)
	o, err := outboxdynamo.New(config)
	require.NoError(t, err)
	_, err = client.CreateTable(context.Background(), o.CreateTableInput())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(o.Table())})
	})
	return o
}

// relay returns a container relay over h's outbox.
func relay(t *testing.T, h *dynamoSuite, p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	r, err := outboxdynamo.NewRelay(h.client, h.outbox, p, config)
	require.NoError(t, err)
	return r
}

func attr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func (h *dynamoSuite) transact(t *testing.T, queueURL string, jobs []producer.Job, commit bool) []outbox.Entry {
	t.Helper()
	order := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(h.orders), Item: map[string]types.AttributeValue{"id": attr(testenv.UniqueName(t))},
	}}
	if !commit {
		order.Put.ConditionExpression = aws.String("attribute_exists(id)") // the order does not exist yet
	}
	items, entries, err := h.outbox.TransactItems([]types.TransactWriteItem{order}, queueURL, jobs...)
	require.NoError(t, err)
	_, err = h.client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if !commit {
		var cancelled *types.TransactionCanceledException
		require.ErrorAs(t, err, &cancelled)
		return nil
	}
	require.NoError(t, err)
	return entries
}

func (h *dynamoSuite) Commit(t *testing.T, queueURL string, jobs ...producer.Job) []outbox.Entry {
	return h.transact(t, queueURL, jobs, true)
}

func (h *dynamoSuite) Rollback(t *testing.T, queueURL string, jobs ...producer.Job) {
	h.transact(t, queueURL, jobs, false)
}

func (h *dynamoSuite) Store(_ *testing.T, lease time.Duration) outbox.Store {
	return outboxdynamo.NewStore(h.client, h.outbox, lease)
}

// Crash changes nothing: a dead relay's claims end with their lease.
func (h *dynamoSuite) Crash(*testing.T, outbox.Store) {}

func (h *dynamoSuite) Pending(t *testing.T) []string {
	output, err := h.client.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(h.outbox.Table()), IndexName: aws.String(outboxdynamo.DefaultIndex),
		KeyConditionExpression:    aws.String("outbox_state = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": attr("pending#0")},
	})
	require.NoError(t, err)
	require.Empty(t, output.LastEvaluatedKey, "one page")
	var ids []string
	for _, item := range output.Items {
		ids = append(ids, item["id"].(*types.AttributeValueMemberS).Value)
	}
	return ids
}

func (h *dynamoSuite) Operator() outbox.Operator { return h.outbox.Operator(h.client) }

// PlantDamaged writes a pending entry whose stored job is cut short, its index key
// (1 s after the epoch) ahead of every other entry's.
func (h *dynamoSuite) PlantDamaged(t *testing.T, queueURL string) string {
	e, err := outbox.NewEntry(queueURL, outboxtest.Job(0), time.Unix(1, 0))
	require.NoError(t, err)
	_, err = h.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(h.outbox.Table()), Item: map[string]types.AttributeValue{
		"id": attr(e.ID), "outbox_state": attr("pending#0"), "outbox_seq": attr("000000000001000000000000" + e.ID),
		"queue_url": attr(queueURL), "job": attr(`{"v":1,"queue":`), "created_ms": &types.AttributeValueMemberN{Value: "1000"},
	}})
	require.NoError(t, err)
	return e.ID
}
