package batches

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/table"
)

// joined counts one job's success with its idempotency record's completion
// (txjoin): the completion carries the shard's update and a check that the job has no
// marker, so the completed record is the job's mark of a counted success and the
// success costs one item write more than the completion. A job with a marker (it was
// dead-lettered, then redriven; or its success was counted apart) gets the marker's
// items instead, or none.
type joined struct {
	b        *Batches
	r        ref
	jobID    string
	redriven bool // the last items were the dead-to-succeeded move

	mu      sync.Mutex
	refused error // the batch refused the end (ErrRefused); nothing was counted
}

// join returns the txjoin.Join of job id's delivery; the idempotency middleware binds
// it when its records are kept at least Config.Retention (they stand for the counts
// for that long, as markers do).
func (b *Batches) join(r ref, jobID string) (*txjoin.Join, *joined) {
	j := &joined{b: b, r: r, jobID: jobID}
	return txjoin.New(b.config.Retention, j.items), j
}

// items implements txjoin.ItemsFunc.
func (j *joined) items(ctx context.Context, canceled *types.TransactionCanceledException) ([]types.TransactWriteItem, bool, error) {
	markerKey, shardKey, err := keysOf(j.r, j.jobID)
	if err != nil {
		return nil, false, err
	}
	now := j.b.config.Now()
	if canceled == nil { // a completion's first try
		j.redriven = false
		check := &types.ConditionCheck{TableName: aws.String(j.b.config.Table), Key: table.KeyAttribute(markerKey),
			ConditionExpression: aws.String("attribute_not_exists(#id)"), ExpressionAttributeNames: map[string]string{"#id": table.PartitionKey},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		shard := j.b.shardUpdate(j.r, shardKey, "ADD #pending :minus, #field :one", attrSucceeded, attrPending, now)
		return []types.TransactWriteItem{{Update: shard}, {ConditionCheck: check}}, true, nil
	}
	// The reasons: 0 the completion, then the items in the order given.
	failed := failedConditions(canceled)
	if j.redriven {
		if failed[2] { // the shard's
			return nil, false, j.refuse(ctx, shardKey, now)
		}
		return nil, false, nil // the marker was moved by another delivery
	}
	if failed[2] { // the marker exists
		item, err := j.b.marker(ctx, markerKey, canceled, 2)
		if err != nil {
			return nil, false, err
		}
		switch {
		case str(item, attrToken) != j.r.token:
			j.setRefused(fmt.Errorf("%w: job %s, batch %s: the attribute's token is not the batch's (the job was not added to this batch)", ErrRefused, j.jobID, j.r.id))
			return nil, false, nil
		case end(str(item, attrState)) != endDead:
			return nil, false, nil // counted before, apart from a completion
		}
		j.redriven = true
		return j.b.redriveItems(j.r, markerKey, shardKey, now), true, nil
	}
	if failed[1] {
		return nil, false, j.refuse(ctx, shardKey, now)
	}
	return nil, false, errors.New("batches: the joined count was cancelled for no condition of its own")
}

// refuse records why the shard refused the end (ErrRefused).
func (j *joined) refuse(ctx context.Context, shardKey string, now time.Time) error {
	j.setRefused(j.b.refused(ctx, j.r, j.jobID, shardKey, now))
	return nil
}

func (j *joined) setRefused(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refused = err
}

// refusal returns the batch's refusal of the end, if it refused it.
func (j *joined) refusal() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refused
}
