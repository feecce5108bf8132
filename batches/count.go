package batches

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/table"
)

// end is how a job left the batch.
type end string

// The states of a job's marker.
const (
	endSucceeded end = "succeeded"
	endDead      end = "dead_lettered"
	endWithdrawn end = "withdrawn"
)

// ErrRefused matches the error for a job end the batch does not accept: its shard is
// missing, holds another token (the attribute names a batch it was not added to), has
// no pending job left, or the batch is past its retention. Nothing is written; the
// middleware logs it (Error) and leaves the job's outcome as it was.
var ErrRefused = errors.New("batches: job end refused")

// count records the end of job id: its marker and the shard's counts in one
// TransactWriteItems, the marker written only if absent, so a job's end is counted
// once however often it is delivered. A job whose marker says dead-lettered and that
// now succeeded is moved from dead-lettered to succeeded (a second transaction,
// conditioned on the marker's state). With check (the job's idempotency record is not
// completed: txjoin), each transaction also holds it: a job whose record is completed
// had its success counted with the completion, and this end is not counted. It
// reports whether the counts changed.
func (b *Batches) count(ctx context.Context, r ref, jobID string, e end, check *types.ConditionCheck) (bool, error) {
	markerKey, shardKey, err := keysOf(r, jobID)
	if err != nil {
		return false, err
	}
	now := b.config.Now()
	// A marker outlives the batch: its expiry is later than the shards', which never
	// move, so no marker is gone (by TTL) while its batch still counts.
	marker := &types.Put{TableName: aws.String(b.config.Table), Item: map[string]types.AttributeValue{
		table.PartitionKey: s(markerKey), attrState: s(string(e)), attrToken: s(r.token), table.TTLAttribute: n(now.Add(b.config.Retention).Unix() + 1),
	}, ConditionExpression: aws.String("attribute_not_exists(#id)"), ExpressionAttributeNames: map[string]string{"#id": table.PartitionKey},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	update := "ADD #pending :minus, #field :one"
	field := map[end]string{endSucceeded: attrSucceeded, endDead: attrDead, endWithdrawn: attrAdded}[e]
	if e == endWithdrawn {
		update = "ADD #pending :minus, #field :minus"
	}
	err = b.transact(ctx, []types.TransactWriteItem{{Put: marker}, {Update: b.shardUpdate(r, shardKey, update, field, attrPending, now)}}, check)
	if err == nil {
		return true, nil
	}
	failed := failedConditions(err)
	switch {
	case failed[2]:
		return false, nil // the job's success was counted with its idempotency record's completion
	case failed[0]:
		item, readErr := b.marker(ctx, markerKey, err, 0)
		if readErr != nil {
			return false, readErr
		}
		if str(item, attrToken) != r.token {
			return false, fmt.Errorf("%w: job %s, batch %s: the attribute's token is not the batch's (the job was not added to this batch)", ErrRefused, jobID, r.id)
		}
		if state := end(str(item, attrState)); e != endSucceeded || state != endDead {
			return false, nil // counted before: a duplicate
		}
		return b.redriven(ctx, r, markerKey, shardKey, now, check)
	case failed[1]:
		return false, b.refused(ctx, r, jobID, shardKey, now)
	}
	return false, fmt.Errorf("batches: counting job %s of batch %s: %w", jobID, r.id, err)
}

// keysOf returns the keys of job id's marker and of its shard.
func keysOf(r ref, jobID string) (markerKey, shardKey string, err error) {
	markerKey, err = table.BatchJobKey(r.id, jobID)
	if err != nil {
		return "", "", err
	}
	shardKey, err = table.BatchShardKey(r.id, shardOf(jobID, r.shards))
	return markerKey, shardKey, err
}

// redriven moves a dead-lettered job that has now succeeded to succeeded.
func (b *Batches) redriven(ctx context.Context, r ref, markerKey, shardKey string, now time.Time, check *types.ConditionCheck) (bool, error) {
	err := b.transact(ctx, b.redriveItems(r, markerKey, shardKey, now), check)
	if err == nil {
		return true, nil
	}
	failed := failedConditions(err)
	switch {
	case failed[0] || failed[2]:
		return false, nil // another delivery moved it first, or the completion counted it
	case failed[1]:
		return false, b.refused(ctx, r, markerKey, shardKey, now)
	}
	return false, fmt.Errorf("batches: counting the redriven job %s of batch %s: %w", markerKey, r.id, err)
}

// redriveItems move a job from dead-lettered to succeeded: its marker (conditioned on
// its state) and its shard's counts.
func (b *Batches) redriveItems(r ref, markerKey, shardKey string, now time.Time) []types.TransactWriteItem {
	marker := &types.Update{TableName: aws.String(b.config.Table), Key: table.KeyAttribute(markerKey),
		UpdateExpression:          aws.String("SET #state = :succeeded"),
		ConditionExpression:       aws.String("#state = :dead"),
		ExpressionAttributeNames:  map[string]string{"#state": attrState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":succeeded": s(string(endSucceeded)), ":dead": s(string(endDead))}}
	return []types.TransactWriteItem{{Update: marker}, {Update: b.shardUpdate(r, shardKey, "ADD #dead :minus, #field :one", attrSucceeded, attrDead, now)}}
}

// shardUpdate is the shard's half of a count: update, conditioned on the batch's token,
// a positive guard count (so no count goes below zero) and the batch's retention.
func (b *Batches) shardUpdate(r ref, shardKey, update, field, guard string, now time.Time) *types.Update {
	u := &types.Update{TableName: aws.String(b.config.Table), Key: table.KeyAttribute(shardKey),
		UpdateExpression:    aws.String(update),
		ConditionExpression: aws.String("#token = :token AND #guard > :zero AND #exp > :now"),
		ExpressionAttributeNames: map[string]string{"#pending": attrPending, "#dead": attrDead, "#field": field, "#guard": guard,
			"#token": attrToken, "#exp": table.TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": n(-1), ":one": n(1), ":zero": n(0),
			":token": s(r.token), ":now": n(now.Unix())},
	}
	u.ExpressionAttributeNames, u.ExpressionAttributeValues = used(u)
	return u
}

// transact writes a count's marker and shard items, and check when there is one, in
// one transaction.
func (b *Batches) transact(ctx context.Context, items []types.TransactWriteItem, check *types.ConditionCheck) error {
	if check != nil {
		items = append(items, types.TransactWriteItem{ConditionCheck: check})
	}
	return txjoin.RetryConflicts(ctx, func() error {
		_, err := b.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	})
}

// failedConditions says which of a transaction's first three actions failed their
// condition.
func failedConditions(err error) (failed [3]bool) {
	canceled, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return failed
	}
	for i, reason := range canceled.CancellationReasons {
		if i < len(failed) && aws.ToString(reason.Code) == "ConditionalCheckFailed" {
			failed[i] = true
		}
	}
	return failed
}

// marker returns an existing marker: from the cancelled transaction when DynamoDB
// returned the item with it (action index), else read.
func (b *Batches) marker(ctx context.Context, key string, err error, index int) (map[string]types.AttributeValue, error) {
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok && len(canceled.CancellationReasons) > index {
		if item := canceled.CancellationReasons[index].Item; len(item) > 0 {
			return item, nil
		}
	}
	return b.getItem(ctx, key)
}

// refused explains a count whose shard condition failed (one read, on this rare path).
func (b *Batches) refused(ctx context.Context, r ref, jobID, shardKey string, now time.Time) error {
	item, err := b.getItem(ctx, shardKey)
	why := "its shard holds no pending job"
	switch {
	case err != nil:
		why = "reading the shard failed: " + err.Error()
	case len(item) == 0:
		why = "the batch has no such shard (never opened)"
	case str(item, attrToken) != r.token:
		why = "the attribute's token is not the batch's (the job was not added to this batch)"
	case num(item, table.TTLAttribute) <= now.Unix():
		why = "the batch is past its retention"
	}
	return fmt.Errorf("%w: job %s, batch %s: %s", ErrRefused, jobID, r.id, why)
}

// used keeps the expression attribute names and values an update's expressions use
// (DynamoDB refuses unused ones).
func used(u *types.Update) (map[string]string, map[string]types.AttributeValue) {
	text := aws.ToString(u.UpdateExpression) + " " + aws.ToString(u.ConditionExpression)
	names := map[string]string{}
	for placeholder, name := range u.ExpressionAttributeNames {
		if containsWord(text, placeholder) {
			names[placeholder] = name
		}
	}
	values := map[string]types.AttributeValue{}
	for placeholder, value := range u.ExpressionAttributeValues {
		if containsWord(text, placeholder) {
			values[placeholder] = value
		}
	}
	return names, values
}

// containsWord says whether text holds placeholder not followed by a name character.
func containsWord(text, placeholder string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], placeholder)
		if j < 0 {
			return false
		}
		end := i + j + len(placeholder)
		if end == len(text) || !isNameByte(text[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
