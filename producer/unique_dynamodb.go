package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDBAPI is the part of the DynamoDB client [DynamoDBUniqueStore] uses;
// *dynamodb.Client satisfies it.
type DynamoDBAPI interface {
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Attributes of a unique key's item. The table's string partition key is "id" (the
// idempotency table's schema, so one table can serve both: keys are stored as
// "unique#" + key); "expiration" is in epoch seconds, for the table's TTL; "expiry_ms"
// is the exact expiry in epoch milliseconds, which the conditions compare.
const (
	uniqueKeyAttribute        = "id"
	uniqueOwnerAttribute      = "owner"
	uniqueMessageIDAttribute  = "message_id"
	uniqueExpirationAttribute = "expiration"
	uniqueExpiryAttribute     = "expiry_ms"
	uniqueKeyPrefix           = "unique#"
)

// DynamoDBUniqueStore is a [UniqueStore] on a DynamoDB table with the string partition
// key "id". A reservation is one conditional PutItem (no item, or an expired one), so of
// concurrent producers of one key exactly one succeeds; confirmation and release are
// conditioned on the reservation's owner token. Reads are strongly consistent. Enable
// TTL on "expiration" to have DynamoDB remove old keys; expiry is checked in the
// conditions either way (TTL deletion can lag by days).
type DynamoDBUniqueStore struct {
	client DynamoDBAPI
	table  string
}

// NewDynamoDBUniqueStore returns a store on table.
func NewDynamoDBUniqueStore(client DynamoDBAPI, table string) *DynamoDBUniqueStore {
	return &DynamoDBUniqueStore{client: client, table: table}
}

func (s *DynamoDBUniqueStore) key(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{uniqueKeyAttribute: &types.AttributeValueMemberS{Value: uniqueKeyPrefix + key}}
}

// Reserve implements [UniqueStore].
func (s *DynamoDBUniqueStore) Reserve(ctx context.Context, key, owner string, now, expires time.Time) (UniqueRecord, bool, error) {
	item := s.key(key)
	item[uniqueOwnerAttribute] = &types.AttributeValueMemberS{Value: owner}
	item[uniqueExpirationAttribute] = epochSeconds(expires)
	item[uniqueExpiryAttribute] = number(expires.UnixMilli())
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #expiry <= :now"),
		ExpressionAttributeNames: map[string]string{
			"#id": uniqueKeyAttribute, "#expiry": uniqueExpiryAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": number(now.UnixMilli())},
	})
	if err == nil {
		return UniqueRecord{Owner: owner, ExpiresAt: expires}, true, nil
	}
	if _, taken := errors.AsType[*types.ConditionalCheckFailedException](err); !taken {
		return UniqueRecord{}, false, fmt.Errorf("PutItem on %s: %w", s.table, err)
	}
	output, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return UniqueRecord{}, false, fmt.Errorf("GetItem on %s: %w", s.table, err)
	}
	held := UniqueRecord{
		Owner:     stringOf(output.Item[uniqueOwnerAttribute]),
		MessageID: stringOf(output.Item[uniqueMessageIDAttribute]),
	}
	if ms, err := strconv.ParseInt(numberOf(output.Item[uniqueExpiryAttribute]), 10, 64); err == nil {
		held.ExpiresAt = time.UnixMilli(ms)
	}
	// The holder was deleted (released) or expired between the two calls: report no
	// message id, so the caller asks again.
	if output.Item == nil || !held.ExpiresAt.After(now) {
		held.MessageID = ""
	}
	return held, false, nil
}

// Confirm implements [UniqueStore].
func (s *DynamoDBUniqueStore) Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 s.key(key),
		UpdateExpression:    aws.String("SET #message = :message, #expiration = :expiration, #expiry = :expiry"),
		ConditionExpression: aws.String("#owner = :owner"),
		ExpressionAttributeNames: map[string]string{
			"#message": uniqueMessageIDAttribute, "#expiration": uniqueExpirationAttribute,
			"#expiry": uniqueExpiryAttribute, "#owner": uniqueOwnerAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":message":    &types.AttributeValueMemberS{Value: messageID},
			":expiration": epochSeconds(expires),
			":expiry":     number(expires.UnixMilli()),
			":owner":      &types.AttributeValueMemberS{Value: owner},
		},
	})
	if err != nil {
		return fmt.Errorf("UpdateItem on %s: %w", s.table, err)
	}
	return nil
}

// Release implements [UniqueStore].
func (s *DynamoDBUniqueStore) Release(ctx context.Context, key, owner string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(key),
		ConditionExpression:       aws.String("#owner = :owner AND attribute_not_exists(#message)"),
		ExpressionAttributeNames:  map[string]string{"#owner": uniqueOwnerAttribute, "#message": uniqueMessageIDAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: owner}},
	})
	if _, notHeld := errors.AsType[*types.ConditionalCheckFailedException](err); err != nil && !notHeld {
		return fmt.Errorf("DeleteItem on %s: %w", s.table, err)
	}
	return nil
}

func number(value int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(value, 10)}
}

// epochSeconds rounds up, so DynamoDB's TTL never removes a key before its expiry.
func epochSeconds(at time.Time) types.AttributeValue {
	return number((at.UnixMilli() + 999) / 1000)
}

func stringOf(value types.AttributeValue) string {
	if s, ok := value.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func numberOf(value types.AttributeValue) string {
	if n, ok := value.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}
