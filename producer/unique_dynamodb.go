package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// DynamoDBAPI is the part of the DynamoDB client [DynamoDBUniqueStore] uses: the shared
// table's client interface, [table.API]. *dynamodb.Client satisfies it.
type DynamoDBAPI = table.API

// Attributes of a unique key's item, in the shared table (package table): the key is
// table.UniqueKey(key) ("unique#" + key) in the table's partition key; the TTL attribute
// (epoch seconds) lets DynamoDB remove it; "expiry_ms" is the exact expiry in epoch
// milliseconds, which the conditions compare.
const (
	uniqueOwnerAttribute     = "owner"
	uniqueMessageIDAttribute = "message_id"
	uniqueExpiryAttribute    = "expiry_ms"
)

// ErrMalformedUniqueItem matches the error a [DynamoDBUniqueStore] returns when the item
// under a unique key is not a unique key's item (no owner or expiry, or an attribute of
// the wrong type): it is neither taken as the key's holder nor overwritten, and Send
// fails with it, sending nothing, until the item is removed.
var ErrMalformedUniqueItem = errors.New("producer: the item under the unique key is not a unique key's item")

// DynamoDBUniqueStore is a [UniqueStore] on the shared DynamoDB table (package table:
// string partition key "id", TTL on "expiration"). A reservation is one conditional
// PutItem (no item, or an expired one), so of concurrent producers of one key exactly
// one succeeds; confirmation, release and freeing are conditioned on the reservation's
// owner token. Reads are strongly consistent. Enable TTL on "expiration" to have DynamoDB
// remove old keys; expiry is checked in the conditions either way (TTL deletion can lag
// by days). A key must be valid UTF-8 and fit, with "unique#", in DynamoDB's 2048-byte
// partition key; the error for another matches [table.ErrInvalidKey].
type DynamoDBUniqueStore struct {
	client DynamoDBAPI
	table  string
}

var _ UniqueStore = (*DynamoDBUniqueStore)(nil)

// NewDynamoDBUniqueStore returns a store on the table named name.
func NewDynamoDBUniqueStore(client DynamoDBAPI, name string) *DynamoDBUniqueStore {
	return &DynamoDBUniqueStore{client: client, table: name}
}

// itemKey returns the item key of the unique key key.
func itemKey(key string) (map[string]types.AttributeValue, error) {
	stored, err := table.UniqueKey(key)
	if err != nil {
		return nil, fmt.Errorf("producer: unique key %.80q: %w", key, err)
	}
	return table.KeyAttribute(stored), nil
}

// Reserve implements [UniqueStore].
func (s *DynamoDBUniqueStore) Reserve(ctx context.Context, key, owner string, now, expires time.Time) (UniqueRecord, bool, error) {
	item, err := itemKey(key)
	if err != nil {
		return UniqueRecord{}, false, err
	}
	item[uniqueOwnerAttribute] = &types.AttributeValueMemberS{Value: owner}
	item[table.TTLAttribute] = epochSeconds(expires)
	item[uniqueExpiryAttribute] = number(expires.UnixMilli())
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #expiry <= :now"),
		ExpressionAttributeNames: map[string]string{
			"#id": table.PartitionKey, "#expiry": uniqueExpiryAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": number(now.UnixMilli())},
	})
	if err == nil {
		return UniqueRecord{Owner: owner, ExpiresAt: expires}, true, nil
	}
	if _, taken := errors.AsType[*types.ConditionalCheckFailedException](err); !taken {
		return UniqueRecord{}, false, fmt.Errorf("PutItem on %s: %w", s.table, err)
	}
	keyOnly, _ := itemKey(key)
	output, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOnly,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return UniqueRecord{}, false, fmt.Errorf("GetItem on %s: %w", s.table, err)
	}
	if output.Item == nil {
		return UniqueRecord{}, false, nil // released since the PutItem: the caller asks again
	}
	held, err := uniqueRecord(output.Item)
	if err != nil {
		return UniqueRecord{}, false, fmt.Errorf("%w: key %q: %w", ErrMalformedUniqueItem, key, err)
	}
	// Expired between the two calls: report no message id, so the caller asks again.
	if !held.ExpiresAt.After(now) {
		held.MessageID = ""
	}
	return held, false, nil
}

// Confirm implements [UniqueStore].
func (s *DynamoDBUniqueStore) Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error {
	keyItem, err := itemKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 keyItem,
		UpdateExpression:    aws.String("SET #message = :message, #expiration = :expiration, #expiry = :expiry"),
		ConditionExpression: aws.String("#owner = :owner"),
		ExpressionAttributeNames: map[string]string{
			"#message": uniqueMessageIDAttribute, "#expiration": table.TTLAttribute,
			"#expiry": uniqueExpiryAttribute, "#owner": uniqueOwnerAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":message":    &types.AttributeValueMemberS{Value: messageID},
			":expiration": epochSeconds(expires),
			":expiry":     number(expires.UnixMilli()),
			":owner":      &types.AttributeValueMemberS{Value: owner},
		},
	})
	if _, notHeld := errors.AsType[*types.ConditionalCheckFailedException](err); notHeld {
		return fmt.Errorf("%w: key %q (UpdateItem on %s: %w)", ErrUniqueKeyNotHeld, key, s.table, err)
	}
	if err != nil {
		return fmt.Errorf("UpdateItem on %s: %w", s.table, err)
	}
	return nil
}

// Release implements [UniqueStore].
func (s *DynamoDBUniqueStore) Release(ctx context.Context, key, owner string) error {
	return s.delete(ctx, key, owner, "#owner = :owner AND attribute_not_exists(#message)")
}

// Free implements [UniqueStore].
func (s *DynamoDBUniqueStore) Free(ctx context.Context, key, owner string) error {
	return s.delete(ctx, key, owner, "#owner = :owner")
}

// delete removes the item of key when condition (on the owner and message id) holds; a
// failed condition is not an error.
func (s *DynamoDBUniqueStore) delete(ctx context.Context, key, owner, condition string) error {
	keyItem, err := itemKey(key)
	if err != nil {
		return err
	}
	names := map[string]string{"#owner": uniqueOwnerAttribute}
	if strings.Contains(condition, "#message") {
		names["#message"] = uniqueMessageIDAttribute
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyItem,
		ConditionExpression:       aws.String(condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: owner}},
	})
	if _, notHeld := errors.AsType[*types.ConditionalCheckFailedException](err); err != nil && !notHeld {
		return fmt.Errorf("DeleteItem on %s: %w", s.table, err)
	}
	return nil
}

// uniqueRecord decodes a unique key's item: a non-empty owner (S) and the expiry (N,
// epoch milliseconds) are required, the message id (S) is optional, and the TTL
// attribute must be a number when present.
func uniqueRecord(item map[string]types.AttributeValue) (UniqueRecord, error) {
	var problems []string
	var held UniqueRecord
	switch owner := item[uniqueOwnerAttribute].(type) {
	case *types.AttributeValueMemberS:
		held.Owner = owner.Value
	case nil:
	default:
		problems = append(problems, fmt.Sprintf("%q is not a string", uniqueOwnerAttribute))
	}
	if held.Owner == "" && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("no %q", uniqueOwnerAttribute))
	}
	switch id := item[uniqueMessageIDAttribute].(type) {
	case *types.AttributeValueMemberS:
		held.MessageID = id.Value
	case nil:
	default:
		problems = append(problems, fmt.Sprintf("%q is not a string", uniqueMessageIDAttribute))
	}
	expiry, ok := item[uniqueExpiryAttribute].(*types.AttributeValueMemberN)
	ms, err := int64(0), error(nil)
	if ok {
		ms, err = strconv.ParseInt(expiry.Value, 10, 64)
	}
	if !ok || err != nil {
		problems = append(problems, fmt.Sprintf("%q is missing or not an integer", uniqueExpiryAttribute))
	}
	held.ExpiresAt = time.UnixMilli(ms)
	if ttl, present := item[table.TTLAttribute]; present {
		if _, number := ttl.(*types.AttributeValueMemberN); !number {
			problems = append(problems, fmt.Sprintf("%q is not a number", table.TTLAttribute))
		}
	}
	if len(problems) > 0 {
		return UniqueRecord{}, errors.New(strings.Join(problems, "; "))
	}
	return held, nil
}

func number(value int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(value, 10)}
}

// epochSeconds rounds up, so DynamoDB's TTL never removes a key before its expiry.
func epochSeconds(at time.Time) types.AttributeValue {
	return number((at.UnixMilli() + 999) / 1000)
}
