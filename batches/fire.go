package batches

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// afterCount checks whether the end of job id finished its batch: one consistent
// GetItem of the job's shard; only when that shard has no pending job left, the full
// check (the batch item, then it and every shard in one TransactGetItems). The last job to end always makes the full
// check after its own write, so it sees every other end.
func (b *Batches) afterCount(ctx context.Context, r ref, jobID string) error {
	key, err := table.BatchShardKey(r.id, shardOf(jobID, r.shards))
	if err != nil {
		return err
	}
	item, err := b.getItem(ctx, key)
	if err != nil {
		return err
	}
	if num(item, attrPending) > 0 {
		return nil
	}
	return b.check(ctx, r.id)
}

// check fires the callbacks a sealed batch with no pending job is due: success when no
// job is dead-lettered, complete (once) otherwise.
func (b *Batches) check(ctx context.Context, id string) error {
	first, err := b.readMeta(ctx, id)
	if err != nil {
		return err
	}
	if !first.sealed || !first.successFired.IsZero() {
		return nil
	}
	m, shards, err := b.snapshot(ctx, first)
	if err != nil || !m.successFired.IsZero() {
		return err
	}
	total := sum(shards)
	switch {
	case total.Pending > 0:
		return nil
	case total.DeadLettered == 0:
		return b.fire(ctx, m, m.success, attrSuccessFired)
	case m.completeFired.IsZero():
		return b.fire(ctx, m, m.complete, attrComplFired)
	}
	return nil
}

// fire sends a callback (none: nothing to send) and then marks it fired. The send is
// once because the callback's unique key is derived from the batch id: a concurrent or
// repeated fire gets a duplicate error and sends nothing. The mark, conditioned on its
// absence, comes after the send, so a crash in between leaves a callback sent and
// unmarked, which the next check marks without sending again.
func (b *Batches) fire(ctx context.Context, m meta, callback *producer.Prepared, firedAttribute string) error {
	if callback != nil {
		_, err := b.sender.SendPrepared(ctx, *callback)
		if duplicate, ok := errors.AsType[*producer.DuplicateJobError](err); ok && !duplicate.Pending {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("batches: sending the callback %s of batch %s: %w", callback.JobID(), m.id, err)
		}
	}
	key, err := table.BatchKey(m.id)
	if err != nil {
		return err
	}
	mark := &dynamodb.UpdateItemInput{
		TableName: aws.String(b.config.Table), Key: table.KeyAttribute(key),
		UpdateExpression:          aws.String("SET #fired = :now"),
		ConditionExpression:       aws.String("attribute_exists(#id) AND attribute_not_exists(#fired)"),
		ExpressionAttributeNames:  map[string]string{"#fired": firedAttribute, "#id": table.PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(b.config.Now().UnixMilli())},
	}
	err = txjoin.RetryConflicts(ctx, func() error {
		_, err := b.api.UpdateItem(ctx, mark)
		return err
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("batches: marking the callback of batch %s fired: %w", m.id, err)
	}
	return nil
}
