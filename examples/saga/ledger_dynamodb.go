package saga

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDBAPI is the part of the DynamoDB client (*dynamodb.Client) [DynamoDBLedger]
// uses; the role needs dynamodb:UpdateItem and dynamodb:Scan on the table.
type DynamoDBAPI interface {
	UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Scan(ctx context.Context, input *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// DynamoDBLedger is the [Effects] of a DynamoDB table with the string partition key "id"
// (the table of package github.com/sqsworker/sqsworker/table). Give it a table of its
// own: its items are named by the keys "ORDER/STEP", which the messages choose. Each key
// is one item: "effect" (written by the first call only), "applied_at" (epoch ms of that
// call) and "calls" (every call under the key, the repeats included), all in one
// UpdateItem, so two calls racing on a key apply its effect once.
type DynamoDBLedger struct {
	client DynamoDBAPI
	table  string
}

// NewDynamoDBLedger returns the ledger kept in table through client.
func NewDynamoDBLedger(client DynamoDBAPI, table string) *DynamoDBLedger {
	return &DynamoDBLedger{client: client, table: table}
}

// Apply records effect under key unless the key was seen, and counts the call either
// way. It returns the UpdateItem error, if any (the effect may or may not be recorded; a
// retry under the same key applies it at most once).
func (l *DynamoDBLedger) Apply(ctx context.Context, key, effect string) (bool, error) {
	output, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(l.table),
		Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}},
		UpdateExpression: aws.String("SET effect = if_not_exists(effect, :effect), applied_at = if_not_exists(applied_at, :now) ADD calls :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":effect": &types.AttributeValueMemberS{Value: effect},
			":now":    &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
			":one":    &types.AttributeValueMemberN{Value: "1"},
		},
		ReturnValues: types.ReturnValueUpdatedOld,
	})
	if err != nil {
		return false, fmt.Errorf("saga: recording %q: %w", key, err)
	}
	_, seen := output.Attributes["effect"]
	return !seen, nil
}

// Effect is one key of a [DynamoDBLedger].
type Effect struct {
	// Key is the idempotency key, "ORDER/STEP".
	Key string
	// Effect is what the first call under Key recorded, for example "charge order-1".
	Effect string
	// Calls counts the calls under Key: 1, or more when a step ran again (a redelivery).
	Calls int
	// AppliedAt is when the effect was recorded (millisecond precision).
	AppliedAt time.Time
}

// Effects reads every key of the ledger (a consistent Scan), in the order the effects
// were applied (then by key). An item that is not a ledger key is an error.
func (l *DynamoDBLedger) Effects(ctx context.Context) ([]Effect, error) {
	var effects []Effect
	paginator := dynamodb.NewScanPaginator(l.client, &dynamodb.ScanInput{TableName: aws.String(l.table), ConsistentRead: aws.Bool(true)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("saga: reading the ledger: %w", err)
		}
		for _, item := range page.Items {
			effect, err := parseEffect(item)
			if err != nil {
				return nil, err
			}
			effects = append(effects, effect)
		}
	}
	slices.SortFunc(effects, func(a, b Effect) int {
		return cmp.Or(a.AppliedAt.Compare(b.AppliedAt), cmp.Compare(a.Key, b.Key))
	})
	return effects, nil
}

func parseEffect(item map[string]types.AttributeValue) (Effect, error) {
	key, okKey := item["id"].(*types.AttributeValueMemberS)
	effect, okEffect := item["effect"].(*types.AttributeValueMemberS)
	calls, okCalls := item["calls"].(*types.AttributeValueMemberN)
	at, okAt := item["applied_at"].(*types.AttributeValueMemberN)
	if !okKey || !okEffect || !okCalls || !okAt {
		return Effect{}, errors.New("saga: a ledger item lacks id, effect, calls or applied_at")
	}
	count, errCalls := strconv.Atoi(calls.Value)
	ms, errAt := strconv.ParseInt(at.Value, 10, 64)
	if errCalls != nil || errAt != nil {
		return Effect{}, fmt.Errorf("saga: ledger item %q: calls %q, applied_at %q are not integers", key.Value, calls.Value, at.Value)
	}
	return Effect{Key: key.Value, Effect: effect.Value, Calls: count, AppliedAt: time.UnixMilli(ms)}, nil
}
