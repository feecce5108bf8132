package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/table"
)

// DynamoDBAPI is the part of the DynamoDB client that [DynamoDBStore] uses: the table's
// shared client interface, [table.API]. *dynamodb.Client satisfies it; tests pass
// recording fakes.
type DynamoDBAPI = table.API

// DynamoDBStore is a [Store] on a DynamoDB table with a string partition key (default
// "id"). Claims are one conditional PutItem; completion and deletion are conditioned on
// the lease; reads are strongly consistent. Enable TTL on the expiration attribute to
// have DynamoDB remove old records; expiry is checked in code either way.
type DynamoDBStore struct {
	client   DynamoDBAPI
	table    string
	names    AttributeNames
	fastPath bool
}

var _ InterruptionStore = (*DynamoDBStore)(nil)

// DynamoDBOption configures a [DynamoDBStore].
type DynamoDBOption func(*DynamoDBStore)

// WithAttributeNames overrides attribute names; empty fields keep their defaults.
func WithAttributeNames(names AttributeNames) DynamoDBOption {
	return func(s *DynamoDBStore) { s.names = names.withDefaults() }
}

// WithFastPath selects how a failed claim learns the existing record. Enabled (the
// default), the claim asks for ReturnValuesOnConditionCheckFailure=ALL_OLD and the
// record arrives with the ConditionalCheckFailedException, saving a read; when the
// backend omits it anyway, [AlreadyExistsError].Existing is nil and the middleware reads
// the record with a consistent GetItem. Disabled, the claim does not ask for it and the
// read always happens.
func WithFastPath(enabled bool) DynamoDBOption {
	return func(s *DynamoDBStore) { s.fastPath = enabled }
}

// NewDynamoDBStore returns a [DynamoDBStore] on table. It panics when client is nil or
// table is empty (programmer errors).
func NewDynamoDBStore(client DynamoDBAPI, table string, options ...DynamoDBOption) *DynamoDBStore {
	if client == nil {
		panic("idempotency: NewDynamoDBStore with a nil client")
	}
	if table == "" {
		panic("idempotency: NewDynamoDBStore with an empty table name")
	}
	store := &DynamoDBStore{client: client, table: table, names: AttributeNames{}.withDefaults(), fastPath: true}
	for _, option := range options {
		option(store)
	}
	return store
}

// Expression placeholders. They are fixed, whatever the configured attribute names.
const (
	claimCondition = "attribute_not_exists(#id) OR #expiration < :now OR (#status = :in_progress AND #in_progress_expiry < :now_ms AND attribute_not_exists(#interrupted))"
	// takeOverCondition: a record that keeps interrupted receives, under the given lease.
	takeOverCondition = "#lease = :lease AND attribute_exists(#interrupted)"
	leaseCondition    = "#lease = :lease"
	completeSet       = "SET #status = :completed, #expiration = :expiration"
	completeSetData   = "SET #status = :completed, #expiration = :expiration, #data = :data"
	completeRemove    = " REMOVE #in_progress_expiry, #deadline"
	renewCondition    = "#lease = :lease AND #status = :in_progress"
	renewSet          = "SET #in_progress_expiry = :in_progress_expiry, #expiration = :expiration"
	interruptSet      = "SET #in_progress_expiry = :in_progress_expiry, #interrupted = :interrupted, #interrupted_message = :interrupted_message REMOVE #deadline"
)

// PutInProgress implements [Store.PutInProgress] with one conditional PutItem:
//
//	attribute_not_exists(id) OR expiration < :now
//	  OR (status = IN_PROGRESS AND in_progress_expiry < :now_ms
//	      AND attribute_not_exists(interrupted))
//
// where :now is now in epoch seconds and :now_ms in epoch milliseconds. A record that
// keeps interrupted receives is taken over instead (TakeOver).
func (s *DynamoDBStore) PutInProgress(ctx context.Context, record Record, now time.Time) error {
	return s.put(ctx, record, claimCondition, map[string]string{
		"#id":                 s.names.Key,
		"#expiration":         s.names.Expiration,
		"#status":             s.names.Status,
		"#in_progress_expiry": s.names.InProgressExpiry,
		"#interrupted":        s.names.Interrupted,
	}, map[string]types.AttributeValue{
		":now":         number(now.Unix()),
		":now_ms":      number(now.UnixMilli()),
		":in_progress": &types.AttributeValueMemberS{Value: string(StatusInProgress)},
	})
}

// TakeOver implements [InterruptionStore.TakeOver] with one PutItem conditioned on
// "lease = :lease AND attribute_exists(interrupted)".
func (s *DynamoDBStore) TakeOver(ctx context.Context, record Record, lease string) error {
	return s.put(ctx, record, takeOverCondition,
		map[string]string{"#lease": s.names.Lease, "#interrupted": s.names.Interrupted},
		map[string]types.AttributeValue{":lease": &types.AttributeValueMemberS{Value: lease}})
}

// put writes the claim record with one conditional PutItem; a failed condition is an
// [*AlreadyExistsError], with the blocking record on the fast path.
func (s *DynamoDBStore) put(ctx context.Context, record Record, condition string, names map[string]string, values map[string]types.AttributeValue) error {
	if err := validateClaim(record); err != nil {
		return err
	}
	input := &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      s.item(record),
		ConditionExpression:       aws.String(condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	if s.fastPath {
		input.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	_, err := s.client.PutItem(ctx, input)
	if err == nil {
		return nil
	}
	if conflict, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		exists := &AlreadyExistsError{Key: record.Key}
		if len(conflict.Item) > 0 {
			existing, decodeErr := s.record(conflict.Item)
			if decodeErr != nil {
				return &StoreError{Op: "put", Key: record.Key, Err: decodeErr}
			}
			exists.Existing = &existing
		}
		return exists
	}
	return &StoreError{Op: "put", Key: record.Key, Err: err}
}

// Interrupt implements [InterruptionStore.Interrupt] with an UpdateItem conditioned on
// "lease = :lease": SET the lease end to epoch millisecond 1 (long past), the count and
// its message id; REMOVE the deadline.
func (s *DynamoDBStore) Interrupt(ctx context.Context, record Record) error {
	return s.update(ctx, "interrupt", record.Key, interruptSet, leaseCondition, map[string]string{
		"#in_progress_expiry":  s.names.InProgressExpiry,
		"#interrupted":         s.names.Interrupted,
		"#interrupted_message": s.names.InterruptedMessage,
		"#deadline":            s.names.Deadline,
		"#lease":               s.names.Lease,
	}, map[string]types.AttributeValue{
		":in_progress_expiry":  number(interruptedLeaseEnd.UnixMilli()),
		":interrupted":         number(int64(max(record.Interrupted, 1))),
		":interrupted_message": &types.AttributeValueMemberS{Value: record.InterruptedMessage},
		":lease":               &types.AttributeValueMemberS{Value: record.Lease},
	})
}

// update makes one conditional UpdateItem on key, its failed condition reported as
// [ErrLeaseLost] (see leaseResult).
func (s *DynamoDBStore) update(ctx context.Context, op, key, update, condition string, names map[string]string, values map[string]types.AttributeValue) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(key),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(condition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return s.leaseResult(op, key, err)
}

// Get implements [Store.Get] with a consistent GetItem.
func (s *DynamoDBStore) Get(ctx context.Context, key string) (Record, error) {
	output, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, &StoreError{Op: "get", Key: key, Err: err}
	}
	if len(output.Item) == 0 {
		return Record{}, fmt.Errorf("%w: key %q", ErrNotFound, key)
	}
	record, err := s.record(output.Item)
	if err != nil {
		return Record{}, &StoreError{Op: "get", Key: key, Err: err}
	}
	return record, nil
}

// Complete implements [Store.Complete] with an UpdateItem conditioned on "lease = :lease".
//
// Before writing, it counts the completed item as DynamoDB does ([table.ItemSize]: the
// key, status, expiration, lease, payload hash and result, names and values): when it is
// over DynamoDB's 400 KB item limit, Complete writes nothing and returns an error
// matching [ErrResultTooLarge], as it does when DynamoDB refuses the update for its size.
func (s *DynamoDBStore) Complete(ctx context.Context, record Record) error {
	update, err := s.completion(record)
	if err != nil {
		return err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: update.TableName, Key: update.Key, UpdateExpression: update.UpdateExpression,
		ConditionExpression: update.ConditionExpression, ExpressionAttributeNames: update.ExpressionAttributeNames,
		ExpressionAttributeValues: update.ExpressionAttributeValues,
	})
	return s.completionResult(record, err)
}

// completion is the update that completes record, conditioned on its lease; it refuses
// a record without expiration and a result over the item limit (see Complete).
func (s *DynamoDBStore) completion(record Record) (*types.Update, error) {
	if record.ExpiresAt.IsZero() {
		return nil, fmt.Errorf("%w: completion for key %q has no expiration", ErrInvalidRecord, record.Key)
	}
	if len(record.Result) > 0 {
		completed := record
		completed.Status, completed.InProgressExpiresAt, completed.Deadline = StatusCompleted, time.Time{}, time.Time{}
		if size := table.ItemSize(s.item(completed)); size > table.MaxItemBytes {
			return nil, fmt.Errorf("%w: key %q: the completed record would be %d bytes with its %d-byte result; DynamoDB's item limit is %d",
				ErrResultTooLarge, record.Key, size, len(record.Result), table.MaxItemBytes)
		}
	}
	names := map[string]string{
		"#status":             s.names.Status,
		"#expiration":         s.names.Expiration,
		"#in_progress_expiry": s.names.InProgressExpiry,
		"#deadline":           s.names.Deadline,
		"#lease":              s.names.Lease,
	}
	values := map[string]types.AttributeValue{
		":completed":  &types.AttributeValueMemberS{Value: string(StatusCompleted)},
		":expiration": number(record.ExpiresAt.Unix()),
		":lease":      &types.AttributeValueMemberS{Value: record.Lease},
	}
	update := completeSet + completeRemove
	if len(record.Result) > 0 {
		update = completeSetData + completeRemove
		names["#data"] = s.names.Data
		values[":data"] = &types.AttributeValueMemberB{Value: record.Result}
	}
	return &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       s.key(record.Key),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(leaseCondition),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, nil
}

// completionResult maps a completion's error: a size refusal, a lost lease, a store error.
func (s *DynamoDBStore) completionResult(record Record, err error) error {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok && len(record.Result) > 0 &&
		apiErr.ErrorCode() == "ValidationException" && strings.Contains(apiErr.ErrorMessage(), "maximum allowed size") {
		// Counted below the limit but refused for its size (an emulator with a lower limit,
		// or attributes the count did not know of).
		return fmt.Errorf("%w: key %q: DynamoDB refused the %d-byte result: %w", ErrResultTooLarge, record.Key, len(record.Result), err)
	}
	return s.leaseResult("complete", record.Key, err)
}

// Delete implements [Store.Delete] with a DeleteItem conditioned on "lease = :lease".
func (s *DynamoDBStore) Delete(ctx context.Context, key, lease string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(key),
		ConditionExpression:       aws.String(leaseCondition),
		ExpressionAttributeNames:  map[string]string{"#lease": s.names.Lease},
		ExpressionAttributeValues: map[string]types.AttributeValue{":lease": &types.AttributeValueMemberS{Value: lease}},
	})
	return s.leaseResult("delete", key, err)
}

// Renew implements [Store.Renew] with an UpdateItem conditioned on
// "lease = :lease AND status = IN_PROGRESS".
func (s *DynamoDBStore) Renew(ctx context.Context, record Record) error {
	return s.update(ctx, "renew", record.Key, renewSet, renewCondition, map[string]string{
		"#in_progress_expiry": s.names.InProgressExpiry,
		"#expiration":         s.names.Expiration,
		"#lease":              s.names.Lease,
		"#status":             s.names.Status,
	}, map[string]types.AttributeValue{
		":in_progress_expiry": number(record.InProgressExpiresAt.UnixMilli()),
		":expiration":         number(record.ExpiresAt.Unix()),
		":lease":              &types.AttributeValueMemberS{Value: record.Lease},
		":in_progress":        &types.AttributeValueMemberS{Value: string(StatusInProgress)},
	})
}

func (s *DynamoDBStore) leaseResult(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return fmt.Errorf("%w: %s key %q", ErrLeaseLost, op, key)
	}
	return &StoreError{Op: op, Key: key, Err: err}
}
