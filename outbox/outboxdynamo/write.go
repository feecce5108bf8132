package outboxdynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/outbox"
)

// The writes of relays and operators to outbox items. Every write but the removal of
// published entries is conditional, so a relay that lost its claim, or an operator
// acting on an entry that moved on, changes nothing.

// remove deletes published entries with BatchWriteItem (25 per call), sending
// unprocessed items again.
func (o *Outbox) remove(ctx context.Context, api API, ids []string) error {
	for start := 0; start < len(ids); start += 25 {
		end := min(start+25, len(ids))
		requests := make([]types.WriteRequest, 0, end-start)
		for _, id := range ids[start:end] {
			requests = append(requests, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{dynamoKey: str(id)}}})
		}
		pending := map[string][]types.WriteRequest{o.table: requests}
		for attempt := 0; len(pending[o.table]) > 0; attempt++ {
			if attempt == 8 {
				return fmt.Errorf("outbox: deleting %d published entries from %s: still unprocessed after %d attempts", len(pending[o.table]), o.table, attempt)
			}
			if attempt > 0 {
				if err := sleep(ctx, time.Duration(1<<attempt)*10*time.Millisecond); err != nil {
					return err
				}
			}
			output, err := api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return fmt.Errorf("outbox: deleting published entries from %s: %w", o.table, err)
			}
			pending = output.UnprocessedItems
		}
	}
	return nil
}

// update runs one conditional UpdateItem on entry id. It returns ok false, and no
// error, when the condition failed; the output then holds the item as the failure
// returned it (input.ReturnValuesOnConditionCheckFailure), if it asked for it.
func (o *Outbox) update(ctx context.Context, api API, id string, input *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, bool, error) {
	input.TableName = aws.String(o.table)
	input.Key = map[string]types.AttributeValue{dynamoKey: str(id)}
	output, err := api.UpdateItem(ctx, input)
	if failed, lost := errors.AsType[*types.ConditionalCheckFailedException](err); lost {
		return &dynamodb.UpdateItemOutput{Attributes: failed.Item}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("outbox: updating entry %s in %s: %w", id, o.table, err)
	}
	return output, true, nil
}

// claimItem claims it for token until until, on the condition that it is still the
// entry the index showed (state and sequence), not claimed by another relay, and due.
// It returns the item as stored and whether the claim was taken: false when the
// condition failed. A claim the SDK retried after its answer was lost meets its own
// result (the item claimed by token): that is a claim taken, not a failed condition, or
// the entry would wait out the claim's lease unsent.
func (o *Outbox) claimItem(ctx context.Context, api API, it dynamoItem, token string, now, until time.Time) (dynamoItem, bool, error) {
	output, ok, err := o.update(ctx, api, it.entry.ID, &dynamodb.UpdateItemInput{
		ConditionExpression: aws.String("#s = :s AND #q = :q AND (attribute_not_exists(#c) OR #c < :now) AND (attribute_not_exists(#n) OR #n <= :now)"),
		UpdateExpression:    aws.String("SET #c = :until, #t = :t"),
		ExpressionAttributeNames: map[string]string{
			"#s": dynamoState, "#q": dynamoSeq, "#c": dynamoClaimEnd, "#n": dynamoNext, "#t": dynamoClaimBy,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": str(it.state), ":q": str(it.seq), ":now": num(now.UnixMilli()), ":until": num(until.UnixMilli()), ":t": str(token),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return dynamoItem{}, false, err
	}
	stored, isEntry := decodeEntry(sdkGetter(output.Attributes))
	if !ok { // taken only by this claim's own earlier attempt
		return stored, isEntry && stored.claimBy == token, nil
	}
	return stored, isEntry, nil
}

// releaseItem ends token's claim on id without another change.
func (o *Outbox) releaseItem(ctx context.Context, api API, id, token string) error {
	_, _, err := o.update(ctx, api, id, &dynamodb.UpdateItemInput{
		ConditionExpression:       aws.String("#t = :t"),
		UpdateExpression:          aws.String("REMOVE #c, #t"),
		ExpressionAttributeNames:  map[string]string{"#c": dynamoClaimEnd, "#t": dynamoClaimBy},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(token)},
	})
	return err
}

// recordRetry records a failed attempt of it under token's claim: the count, the next
// attempt time and the error, and ends the claim. An entry outside a FIFO group moves
// behind the entries due now (its key takes the next attempt time).
func (o *Outbox) recordRetry(ctx context.Context, api API, it dynamoItem, token string, attempts int, next time.Time, cause error) error {
	set := "SET #a = :a, #n = :n, #e = :e"
	names := map[string]string{"#a": dynamoAttempts, "#n": dynamoNext, "#e": dynamoLastError, "#c": dynamoClaimEnd, "#t": dynamoClaimBy}
	values := map[string]types.AttributeValue{
		":a": num(int64(attempts)), ":n": num(next.UnixMilli()), ":e": str(outbox.ErrorText(cause)), ":t": str(token),
	}
	if !it.entry.Ordered() && len(it.seq) > 12 {
		set += ", #q = :q"
		names["#q"], values[":q"] = dynamoSeq, str(seqKey(next, it.seq[12:]))
	}
	_, _, err := o.update(ctx, api, it.entry.ID, &dynamodb.UpdateItemInput{
		ConditionExpression:       aws.String("#t = :t"),
		UpdateExpression:          aws.String(set + " REMOVE #c, #t"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return err
}

// markFailed moves it to the index's "failed" partition, or "parked" for an entry of a
// FIFO group, with reason, and ends any claim. token, if not empty, is the claim the
// relay must still hold; otherwise the entry must still be in the partition it was read
// from. It does nothing when the condition fails (the entry was published, or another
// relay took it).
func (o *Outbox) markFailed(ctx context.Context, api API, it dynamoItem, token string, attempts int, reason error) error {
	state := stateFailed
	if it.entry.Ordered() {
		state = stateParked
	}
	condition, values := "#s = :from", map[string]types.AttributeValue{":from": str(it.state)}
	if token != "" {
		condition, values = "#t = :t", map[string]types.AttributeValue{":t": str(token)}
	}
	text := str(outbox.ErrorText(reason))
	values[":state"], values[":shard"], values[":r"], values[":f"], values[":a"] = str(state), str(it.state), text, num(o.now().UnixMilli()), num(int64(attempts))
	_, _, err := o.update(ctx, api, it.entry.ID, &dynamodb.UpdateItemInput{
		ConditionExpression: aws.String(condition),
		UpdateExpression:    aws.String("SET #s = :state, #shard = :shard, #r = :r, #e = :r, #f = :f, #a = :a REMOVE #c, #t, #n"),
		ExpressionAttributeNames: map[string]string{
			"#s": dynamoState, "#shard": dynamoShard, "#r": dynamoReason, "#e": dynamoLastError, "#f": dynamoFailedAt,
			"#a": dynamoAttempts, "#c": dynamoClaimEnd, "#t": dynamoClaimBy, "#n": dynamoNext,
		},
		ExpressionAttributeValues: values,
	})
	return err
}

// failedCondition matches a failed entry (either failed partition).
const failedCondition = "#s IN (:failed, :parked)"

// Retry makes the failed entry id unpublished again, due at once, with no attempts
// counted (LastError keeps its last error): a parked group goes on from it. It returns an
// error wrapping [outbox.ErrNotFailed] when no failed entry has that id.
func (o *Outbox) Retry(ctx context.Context, api API, id string) error {
	_, ok, err := o.update(ctx, api, id, &dynamodb.UpdateItemInput{
		ConditionExpression: aws.String(failedCondition + " AND attribute_exists(#shard)"),
		UpdateExpression:    aws.String("SET #s = #shard, #a = :zero REMOVE #shard, #r, #f, #n"),
		ExpressionAttributeNames: map[string]string{
			"#s": dynamoState, "#shard": dynamoShard, "#a": dynamoAttempts, "#r": dynamoReason, "#f": dynamoFailedAt, "#n": dynamoNext,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{":failed": str(stateFailed), ":parked": str(stateParked), ":zero": num(0)},
	})
	if err != nil {
		return fmt.Errorf("outbox: retrying entry %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	return nil
}

// Skip deletes the failed entry id: it is never sent, and a group it parked goes on
// with its next entry. It returns an error wrapping [outbox.ErrNotFailed] when no failed entry
// has that id.
func (o *Outbox) Skip(ctx context.Context, api API, id string) error {
	_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(o.table),
		Key:                       map[string]types.AttributeValue{dynamoKey: str(id)},
		ConditionExpression:       aws.String(failedCondition),
		ExpressionAttributeNames:  map[string]string{"#s": dynamoState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":failed": str(stateFailed), ":parked": str(stateParked)},
	})
	if _, missing := errors.AsType[*types.ConditionalCheckFailedException](err); missing {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	if err != nil {
		return fmt.Errorf("outbox: skipping entry %s: %w", id, err)
	}
	return nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
