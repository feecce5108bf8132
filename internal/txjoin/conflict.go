package txjoin

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Retries of a write that met a concurrent transaction on one of its items.
const (
	conflictAttempts = 10
	conflictBackoff  = 10 * time.Millisecond
	conflictMaxWait  = 500 * time.Millisecond
)

// RetryConflicts calls write until it does not fail for a conflict with a concurrent
// transaction, up to conflictAttempts times, waiting a jittered, doubling backoff
// between calls. DynamoDB cancels a transaction that meets another on one item
// (TransactionCanceledException, reason TransactionConflict) and refuses a single-item
// write on an item a transaction holds (TransactionConflictException); the SDK retries
// neither. Counts on one shard meet often at high rates, so they are retried here,
// before the job's end fails and SQS has to deliver it again.
func RetryConflicts(ctx context.Context, write func() error) error {
	wait := conflictBackoff
	for attempt := 1; ; attempt++ {
		err := write()
		if err == nil || !isConflict(err) || attempt == conflictAttempts {
			return err
		}
		timer := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		wait = min(2*wait, conflictMaxWait)
	}
}

// isConflict says whether err is a conflict with a concurrent transaction, or a
// throttled action of a transaction, with no failed condition.
func isConflict(err error) bool {
	if _, ok := errors.AsType[*types.TransactionConflictException](err); ok {
		return true
	}
	canceled, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return false
	}
	conflict := false
	for _, reason := range canceled.CancellationReasons {
		switch aws.ToString(reason.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			conflict = true
		case "ConditionalCheckFailed":
			return false
		}
	}
	return conflict
}
