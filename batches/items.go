package batches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// Attribute names of the batch item, its shards and its job markers.
const (
	attrToken        = "token"
	attrShards       = "shards"
	attrCreated      = "created_ms"
	attrSealed       = "sealed"
	attrSuccess      = "success_callback"
	attrComplete     = "complete_callback"
	attrSuccessFired = "success_fired_ms"
	attrComplFired   = "complete_fired_ms"
	attrAdded        = "added"
	attrPending      = "pending"
	attrSucceeded    = "succeeded"
	attrDead         = "dead_lettered"
	attrState        = "state"
)

// ErrNotFound matches the error for a batch id with no batch (never opened, or past its
// Config.Retention).
var ErrNotFound = errors.New("batches: batch not found")

// Counts are a batch's job counts, or one shard's.
type Counts struct {
	// Added is how many jobs [Batch.Add] counted (withdrawn ones included).
	Added int64 `json:"added"`
	// Pending is how many of them have not finished: added, not yet succeeded, dead-lettered
	// or withdrawn.
	Pending int64 `json:"pending"`
	// Succeeded is how many succeeded, each once however often it was delivered.
	Succeeded int64 `json:"succeeded"`
	// DeadLettered is how many ended without success (dead-lettered, retries exhausted or
	// cancelled) and have not succeeded since (a redriven job that succeeds moves from
	// here to Succeeded).
	DeadLettered int64 `json:"dead_lettered"`
}

// Callback describes one of a batch's callbacks.
type Callback struct {
	// QueueURL, JobType and JobID are the callback job's queue, type and id (derived from
	// the batch id, the same for every send).
	QueueURL string `json:"queue_url"`
	JobType  string `json:"job_type,omitempty"`
	JobID    string `json:"job_id"`
	// FiredAt is when it was sent; zero while it has not been.
	FiredAt time.Time `json:"fired_at,omitzero"`
}

// Status is a batch as [Batches.Get] reads it.
type Status struct {
	// ID is the batch id.
	ID string `json:"id"`
	// CreatedAt is when it was opened; ExpiresAt ends its Config.Retention.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Sealed says [Batch.Seal] was called: the callbacks may fire.
	Sealed bool `json:"sealed"`
	// Counts are the sums over the shards.
	Counts
	// Shards holds each counter shard's counts, in shard order.
	Shards []Counts `json:"shards"`
	// Success and Complete are the callbacks; nil when the batch has none of that kind.
	Success  *Callback `json:"success,omitempty"`
	Complete *Callback `json:"complete,omitempty"`
}

// State names where the batch is: "open" (not sealed), "sealed" (jobs pending),
// "succeeded" (every job succeeded) or "complete" (every job ended, some dead-lettered),
// with " (callback not sent)" when the callback of that end is configured and has not
// been sent yet (its send failed: the job that ended the batch is retried).
func (s Status) State() string {
	switch {
	case !s.Sealed:
		return "open"
	case s.Pending > 0:
		return "sealed"
	case s.DeadLettered == 0:
		return "succeeded" + notSent(s.Success)
	}
	return "complete" + notSent(s.Complete)
}

func notSent(c *Callback) string {
	if c != nil && c.FiredAt.IsZero() {
		return " (callback not sent)"
	}
	return ""
}

// meta is the batch item.
type meta struct {
	id                          string
	token                       string
	shards                      int
	created, expires            time.Time
	sealed                      bool
	success, complete           *producer.Prepared
	successFired, completeFired time.Time
}

func (b *Batches) getItem(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.config.Table), Key: table.KeyAttribute(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("batches: reading %s: %w", key, err)
	}
	return out.Item, nil
}

// readMeta reads the batch item of id (consistent), ErrNotFound when there is none or
// it has expired.
func (b *Batches) readMeta(ctx context.Context, id string) (meta, error) {
	key, err := table.BatchKey(id)
	if err != nil {
		return meta{}, err
	}
	item, err := b.getItem(ctx, key)
	if err != nil {
		return meta{}, err
	}
	return b.parseMeta(id, key, item)
}

// parseMeta decodes the batch item of id, ErrNotFound when there is none or it has
// expired.
func (b *Batches) parseMeta(id, key string, item map[string]types.AttributeValue) (meta, error) {
	if len(item) == 0 {
		return meta{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	m := meta{id: id, token: str(item, attrToken), shards: int(num(item, attrShards)), sealed: boolean(item, attrSealed),
		created: time.UnixMilli(num(item, attrCreated)), expires: time.Unix(num(item, table.TTLAttribute), 0),
		successFired: msTime(item, attrSuccessFired), completeFired: msTime(item, attrComplFired)}
	if m.token == "" || m.shards < 1 || m.shards > MaxShards {
		return meta{}, fmt.Errorf("batches: the item %s is not a batch item", key)
	}
	if !b.config.Now().Before(m.expires) {
		return meta{}, fmt.Errorf("%w: %s expired at %s", ErrNotFound, id, m.expires.UTC().Format(time.RFC3339))
	}
	for name, slot := range map[string]**producer.Prepared{attrSuccess: &m.success, attrComplete: &m.complete} {
		if text := str(item, name); text != "" {
			var p producer.Prepared
			if err := json.Unmarshal([]byte(text), &p); err != nil {
				return meta{}, fmt.Errorf("batches: batch %s: decoding its %s: %w", id, name, err)
			}
			*slot = &p
		}
	}
	return m, nil
}

// snapshot reads the item of batch first (read before, for its shard count) and every
// one of its shards again in one TransactGetItems (serializable: all as of one
// instant, 2 read units an item). Shards read one by one could show a
// child's shard before its count was raised and its parent's after the parent ended:
// a pending job would go unseen, and a callback fire early.
func (b *Batches) snapshot(ctx context.Context, first meta) (meta, []Counts, error) {
	id := first.id
	metaKey, err := table.BatchKey(id)
	if err != nil {
		return meta{}, nil, err
	}
	gets := []types.TransactGetItem{{Get: &types.Get{TableName: aws.String(b.config.Table), Key: table.KeyAttribute(metaKey)}}}
	for i := range first.shards {
		key, err := table.BatchShardKey(id, i)
		if err != nil {
			return meta{}, nil, err
		}
		gets = append(gets, types.TransactGetItem{Get: &types.Get{TableName: aws.String(b.config.Table), Key: table.KeyAttribute(key)}})
	}
	var out *dynamodb.TransactGetItemsOutput
	err = txjoin.RetryConflicts(ctx, func() error {
		var err error
		out, err = b.api.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
		return err
	})
	if err != nil {
		return meta{}, nil, fmt.Errorf("batches: reading batch %s: %w", id, err)
	}
	if len(out.Responses) != len(gets) {
		return meta{}, nil, fmt.Errorf("batches: reading batch %s: %d items answered of %d", id, len(out.Responses), len(gets))
	}
	m, err := b.parseMeta(id, metaKey, out.Responses[0].Item)
	if err != nil {
		return meta{}, nil, err
	}
	counts := make([]Counts, first.shards)
	for i := range counts {
		item := out.Responses[i+1].Item
		if len(item) == 0 {
			return meta{}, nil, fmt.Errorf("batches: batch %s has no shard %d", id, i)
		}
		counts[i] = shardCounts(item)
	}
	return m, counts, nil
}

func shardCounts(item map[string]types.AttributeValue) Counts {
	return Counts{Added: num(item, attrAdded), Pending: num(item, attrPending), Succeeded: num(item, attrSucceeded), DeadLettered: num(item, attrDead)}
}

func sum(shards []Counts) Counts {
	var total Counts
	for _, c := range shards {
		total.Added += c.Added
		total.Pending += c.Pending
		total.Succeeded += c.Succeeded
		total.DeadLettered += c.DeadLettered
	}
	return total
}

// Get reads batch id: its counts and callbacks as of one instant (a consistent GetItem
// of its item, then one TransactGetItems of the item and every shard). It returns an
// error matching [ErrNotFound] for an id with no batch or one past its retention, and
// [ErrInvalidAttribute] for an id that is not a ULID.
func (b *Batches) Get(ctx context.Context, id string) (Status, error) {
	if err := validID(id); err != nil {
		return Status{}, err
	}
	first, err := b.readMeta(ctx, id)
	if err != nil {
		return Status{}, err
	}
	m, shards, err := b.snapshot(ctx, first)
	if err != nil {
		return Status{}, err
	}
	return Status{ID: id, CreatedAt: m.created, ExpiresAt: m.expires, Sealed: m.sealed, Counts: sum(shards), Shards: shards,
		Success: callbackStatus(m.success, m.successFired), Complete: callbackStatus(m.complete, m.completeFired)}, nil
}

func callbackStatus(p *producer.Prepared, fired time.Time) *Callback {
	if p == nil {
		return nil
	}
	return &Callback{QueueURL: p.QueueURL, JobType: p.Type(), JobID: p.JobID(), FiredAt: fired}
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func boolean(item map[string]types.AttributeValue, name string) bool {
	v, ok := item[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func msTime(item map[string]types.AttributeValue, name string) time.Time {
	if n := num(item, name); n > 0 {
		return time.UnixMilli(n)
	}
	return time.Time{}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
