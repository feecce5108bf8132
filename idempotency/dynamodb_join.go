package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
)

// transactor is the call a joined completion makes; *dynamodb.Client has it.
type transactor interface {
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// joinStore is a store that completes a record in one transaction with an outer
// middleware's writes (package txjoin). The DynamoDB store is one when its client can
// make transactions.
type joinStore interface {
	notCompletedCheck(key string) types.ConditionCheck
	completeJoined(ctx context.Context, record Record, items []types.TransactWriteItem) error
}

// joinable returns the store as a joinStore, if it is one.
func joinable(store Store) (joinStore, bool) {
	s, ok := store.(*DynamoDBStore)
	if !ok {
		return nil, false
	}
	if _, ok := s.client.(transactor); !ok {
		return nil, false
	}
	return s, true
}

// joinCanceledError is a joined completion cancelled by a condition of the outer
// middleware's items (index 1 on); the record was not changed.
type joinCanceledError struct {
	canceled *types.TransactionCanceledException
}

func (e *joinCanceledError) Error() string {
	return "idempotency: the joined completion's other writes were refused: " + e.canceled.Error()
}

// notCompletedCheck passes while key's record is not completed (absent, or in progress).
func (s *DynamoDBStore) notCompletedCheck(key string) types.ConditionCheck {
	return types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       s.key(key),
		ConditionExpression:       aws.String("attribute_not_exists(#status) OR #status <> :completed"),
		ExpressionAttributeNames:  map[string]string{"#status": s.names.Status},
		ExpressionAttributeValues: map[string]types.AttributeValue{":completed": &types.AttributeValueMemberS{Value: string(StatusCompleted)}},
	}
}

// completeJoined completes record as Complete does, in one TransactWriteItems with
// items after the completion's update, the update conditioned on the lease and on the
// record being in progress. Conflicts with concurrent transactions are retried
// (txjoin.RetryConflicts). A failed condition on the update is ErrLeaseLost, unless
// the record turns out completed under this lease: the SDK retried the call after its
// first attempt was committed and its answer lost, and the retry met its own result,
// which is success. (The SDK's retries carry the first attempt's client request token,
// which DynamoDB answers as the first; a server that does not is covered here.) A
// failed condition on items is a *joinCanceledError.
func (s *DynamoDBStore) completeJoined(ctx context.Context, record Record, items []types.TransactWriteItem) error {
	update, err := s.completion(record)
	if err != nil {
		return err
	}
	update.ConditionExpression = aws.String(renewCondition)
	update.ExpressionAttributeValues[":in_progress"] = &types.AttributeValueMemberS{Value: string(StatusInProgress)}
	transaction := append([]types.TransactWriteItem{{Update: update}}, items...)
	client := s.client.(transactor)
	err = txjoin.RetryConflicts(ctx, func() error {
		_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: transaction})
		return err
	})
	canceled, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return s.completionResult(record, err)
	}
	for i, reason := range canceled.CancellationReasons {
		if aws.ToString(reason.Code) != "ConditionalCheckFailed" {
			continue
		}
		if i > 0 {
			return &joinCanceledError{canceled: canceled}
		}
		stored, getErr := s.Get(ctx, record.Key)
		if getErr == nil && stored.Status == StatusCompleted && stored.Lease == record.Lease {
			return nil
		}
		return fmt.Errorf("%w: complete key %q", ErrLeaseLost, record.Key)
	}
	return &StoreError{Op: "complete", Key: record.Key, Err: err}
}

// complete completes the record: with the writes of the outer middleware's join when
// one is bound and the store can join them, else alone. A join whose items keep being
// refused is asked again with each cancellation, up to maxJoinTries.
func (m *middleware) complete(ctx context.Context, join *txjoin.Join, record Record) error {
	store, ok := joinable(m.store)
	if join == nil || !ok {
		return m.store.Complete(ctx, record)
	}
	var canceled *types.TransactionCanceledException
	for range maxJoinTries {
		items, use, err := join.Items(ctx, canceled)
		if err != nil {
			return fmt.Errorf("idempotency: key %q: the joined writes: %w", record.Key, err)
		}
		if !use {
			return m.store.Complete(ctx, record)
		}
		err = store.completeJoined(ctx, record, items)
		refused, isRefused := errors.AsType[*joinCanceledError](err)
		if !isRefused {
			if err == nil {
				join.Committed(items)
			}
			return err
		}
		canceled = refused.canceled
	}
	return fmt.Errorf("idempotency: key %q: the joined writes were refused %d times", record.Key, maxJoinTries)
}

// maxJoinTries bounds the joined completions of one record.
const maxJoinTries = 3
