package table

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table's schema.
const (
	// PartitionKey is the name of the table's string (S) partition key. The table has no
	// sort key.
	PartitionKey = "id"
	// TTLAttribute is the attribute DynamoDB's TTL reads: an item's expiry in epoch
	// SECONDS (a number). TTL deletes expired items late (typically within days) and
	// emulators never do, so every reader also checks expiry itself.
	TTLAttribute = "expiration"
)

// Limits of the table's items ("Constraints in Amazon DynamoDB").
const (
	// MaxKeyBytes is DynamoDB's limit on a partition key value: 2048 bytes of UTF-8.
	MaxKeyBytes = 2048
	// MaxItemBytes is DynamoDB's item size limit, 400 KB: attribute names and values
	// counted as [ItemSize] counts them.
	MaxItemBytes = 400 * 1024
)

// API is the part of the DynamoDB client that the table's users call: single-item reads
// and conditional writes. *dynamodb.Client satisfies it; tests pass recording or
// fault-injecting wrappers. A user that needs more (the scheduler's transactions) embeds
// it in its own interface; one that needs less narrows it.
type API interface {
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// KeyAttribute returns the key of the item stored under key (built with [Key] or one of
// its layouts), as GetItem, UpdateItem and DeleteItem take it: {PartitionKey: key}.
func KeyAttribute(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: &types.AttributeValueMemberS{Value: key}}
}
