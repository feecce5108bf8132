// Package txjoin joins writes of an outer middleware to the DynamoDB transaction that
// completes a job's idempotency record, so that both are written, or neither.
//
// The batches middleware uses it to count a job's success in the same
// TransactWriteItems that marks its idempotency record completed: the completed record
// is then the job's mark of having been counted, a duplicate delivery that the record
// answers counts nothing, and a success costs one item write more than the completion
// alone. The outer middleware puts a [*Join] in the context; the idempotency middleware,
// when its store is DynamoDB, binds it ([Join.Bind]: a condition check on the record,
// for writes the outer middleware makes itself, and the records' TTL, which must be
// at least the join's minimum for the record to serve as the mark), asks it for the
// items to add ([Join.Items]), and reports which were committed ([Join.Committed]) or
// that a completed record answered the delivery ([Join.Answer]).
package txjoin

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemsFunc returns the writes to add to the completion's transaction, after the
// completion's own update. canceled is nil on the first try; on a later one it is the
// previous try's cancellation, whose reasons from index 1 on are the items ItemsFunc
// returned then. ok false completes the record without any: the outer middleware's
// writes were made before, or are refused, so a completed record stands for them
// either way. An error fails the completion (the record stays in progress), so that a
// completed record never stands for writes that were not made.
type ItemsFunc func(ctx context.Context, canceled *types.TransactionCanceledException) (items []types.TransactWriteItem, ok bool, err error)

// Join is one delivery's link between the two middlewares. Safe for concurrent use.
type Join struct {
	items  ItemsFunc
	minTTL time.Duration

	mu          sync.Mutex
	recordCheck *types.ConditionCheck
	committed   []types.TransactWriteItem
	answered    bool
}

// New returns a Join whose completion writes come from items, for records kept at least
// minTTL after their completion (the completed record marks the writes as made for
// that long).
func New(minTTL time.Duration, items ItemsFunc) *Join { return &Join{items: items, minTTL: minTTL} }

type joinKey struct{}

// With returns ctx carrying j.
func With(ctx context.Context, j *Join) context.Context {
	return context.WithValue(ctx, joinKey{}, j)
}

// From returns the Join in ctx, or nil.
func From(ctx context.Context) *Join {
	j, _ := ctx.Value(joinKey{}).(*Join)
	return j
}

// Items returns the writes to add to the completion (see [ItemsFunc]).
func (j *Join) Items(ctx context.Context, canceled *types.TransactionCanceledException) ([]types.TransactWriteItem, bool, error) {
	return j.items(ctx, canceled)
}

// Committed records that items were committed with the completion.
func (j *Join) Committed(items []types.TransactWriteItem) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.committed = items
}

// CommittedItems returns the items committed with the completion, and whether any were.
func (j *Join) CommittedItems() ([]types.TransactWriteItem, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.committed, j.committed != nil
}

// Answer records that a completed idempotency record answered the delivery: the handler
// did not run, and the completion that record holds was written with the outer
// middleware's items, if it gave any.
func (j *Join) Answer() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.answered = true
}

// Answered says whether a completed record answered the delivery.
func (j *Join) Answered() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.answered
}

// Bind is called by the idempotency middleware before it claims: check passes while
// the job's record is not completed, and ttl is how long a completed record is kept.
// It reports whether the join applies (ttl is at least the join's minimum); when it
// does not, the outer middleware makes its writes apart and the middleware completes
// the record alone.
func (j *Join) Bind(check types.ConditionCheck, ttl time.Duration) bool {
	if ttl < j.minTTL {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recordCheck = &check
	return true
}

// Bound returns the check given to a Bind that applied, and whether there was one.
func (j *Join) Bound() (types.ConditionCheck, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.recordCheck == nil {
		return types.ConditionCheck{}, false
	}
	return *j.recordCheck, true
}
