package outboxdynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/outbox"
)

// API is the part of the DynamoDB client the relays and the operator's methods
// ([Outbox.Failed], [Outbox.Retry], [Outbox.Skip]...) use; *dynamodb.Client
// satisfies it.
type API interface {
	Query(ctx context.Context, input *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, input *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchWriteItem(ctx context.Context, input *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// maxQueryPage bounds the Limit of one Query call (DynamoDB also stops a page at 1 MB).
const maxQueryPage = 1000

// dynamoItem is an outbox item as read from the index (eventually consistent) or from
// an UpdateItem's answer.
type dynamoItem struct {
	entry    outbox.Entry
	state    string // its index partition: pending#N, failed or parked
	seq      string
	claimEnd time.Time // zero when not claimed
	claimBy  string
	damage   error // set when the entry cannot be decoded
}

// groupKey returns the item's FIFO group ("" when not ordered).
func (it dynamoItem) groupKey() string {
	if !it.entry.Ordered() {
		return ""
	}
	return it.entry.QueueURL + "\x00" + it.entry.GroupID
}

// decodeEntry reads an outbox item from its string and number attributes (an SDK item
// or a stream image). ok is false when the item is not an outbox entry (no outbox
// state); an entry that cannot be decoded is returned with its damage set.
func decodeEntry(get func(name string) (string, bool)) (it dynamoItem, ok bool) {
	it.state, _ = get(dynamoState)
	if !strings.HasPrefix(it.state, pendingPrefix) && it.state != stateFailed && it.state != stateParked {
		return dynamoItem{}, false
	}
	e := &it.entry
	e.ID, _ = get(dynamoKey)
	it.seq, _ = get(dynamoSeq)
	e.QueueURL, _ = get(dynamoQueue)
	e.GroupID, _ = get(dynamoGroup)
	job, hasJob := get(dynamoJob)
	e.FailureReason, _ = get(dynamoReason)
	e.LastError, _ = get(dynamoLastError)
	it.claimBy, _ = get(dynamoClaimBy)
	var bad []string
	number := func(name string) int64 {
		text, has := get(name)
		if !has {
			return 0
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			bad = append(bad, name)
		}
		return n
	}
	e.CreatedAt = time.UnixMilli(number(dynamoCreated))
	e.Attempts = int(min(max(number(dynamoAttempts), 0), 1<<31-1))
	e.FailedAt = unixMilli(number(dynamoFailedAt))
	e.NextAttemptAt = unixMilli(number(dynamoNext))
	it.claimEnd = unixMilli(number(dynamoClaimEnd))
	for name, value := range map[string]string{dynamoKey: e.ID, dynamoQueue: e.QueueURL, dynamoSeq: it.seq} {
		if value == "" {
			bad = append(bad, name+" (missing)")
		}
	}
	if len(bad) > 0 {
		it.damage = fmt.Errorf("%w: item %q: %s", outbox.ErrDamaged, e.ID, strings.Join(bad, ", "))
	} else if err := e.DecodeJob(job, hasJob); err != nil {
		it.damage = err
	}
	return it, true
}

func unixMilli(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func sdkGetter(item map[string]types.AttributeValue) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return v.Value, true
		case *types.AttributeValueMemberN:
			return v.Value, true
		}
		return "", false
	}
}

// seqKey returns the index sort key of an entry: at's Unix milliseconds in 12 hex
// digits, then rest (which keeps keys unique and, within one writer, in write order).
func seqKey(at time.Time, rest string) string {
	return fmt.Sprintf("%012x", max(at.UnixMilli(), 0)) + rest
}

// scan reads the items of one index partition in outbox_seq order, those whose key is
// below before when before is not empty, and calls each with them until it returns
// false or the partition ends.
func (o *Outbox) scan(ctx context.Context, api API, state, before string, each func(dynamoItem) bool) error {
	condition := "#s = :s"
	names := map[string]string{"#s": dynamoState}
	values := map[string]types.AttributeValue{":s": str(state)}
	if before != "" {
		condition += " AND #q < :q"
		names["#q"], values[":q"] = dynamoSeq, str(before)
	}
	var start map[string]types.AttributeValue
	for {
		output, err := api.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(o.table), IndexName: aws.String(o.index),
			KeyConditionExpression: aws.String(condition), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			Limit: aws.Int32(maxQueryPage), ExclusiveStartKey: start,
		})
		if err != nil {
			return fmt.Errorf("outbox: querying %s index %s for %q: %w", o.table, o.index, state, err)
		}
		for _, item := range output.Items {
			if it, ok := decodeEntry(sdkGetter(item)); ok && !each(it) {
				return nil
			}
		}
		if len(output.LastEvaluatedKey) == 0 {
			return nil
		}
		start = output.LastEvaluatedKey
	}
}

// query returns up to limit entries of one index partition, in outbox_seq order
// (damaged ones too, with what could be read).
func (o *Outbox) query(ctx context.Context, api API, state string, limit int) ([]outbox.Entry, error) {
	var entries []outbox.Entry
	if limit <= 0 {
		return nil, nil
	}
	err := o.scan(ctx, api, state, "", func(it dynamoItem) bool {
		entries = append(entries, it.entry)
		return len(entries) < limit
	})
	return entries, err
}

// Failed returns up to limit failed entries with their reasons: those SQS refused, those
// that cannot be decoded and those whose attempts ran out; first the heads of parked
// FIFO groups (the index's "parked" partition), then the others ("failed"), each in
// creation order.
func (o *Outbox) Failed(ctx context.Context, api API, limit int) ([]outbox.Entry, error) {
	parked, err := o.query(ctx, api, stateParked, limit)
	if err != nil {
		return nil, err
	}
	failed, err := o.query(ctx, api, stateFailed, limit-len(parked))
	return append(parked, failed...), err
}

// Parked returns up to limit parked FIFO message groups (oldest first): for each, its
// earliest failed entry, which holds it back, and the number of unpublished entries
// behind it (counted with a query of the group's index partition per group).
func (o *Outbox) Parked(ctx context.Context, api API, limit int) ([]outbox.ParkedGroup, error) {
	var groups []outbox.ParkedGroup
	seen := map[string]bool{}
	err := o.scan(ctx, api, stateParked, "", func(it dynamoItem) bool {
		if key := it.groupKey(); key != "" && !seen[key] {
			seen[key] = true
			groups = append(groups, outbox.ParkedGroup{QueueURL: it.entry.QueueURL, GroupID: it.entry.GroupID, Entry: it.entry})
		}
		return len(groups) < limit
	})
	if err != nil {
		return nil, err
	}
	for i := range groups {
		g := &groups[i]
		err := o.scan(ctx, api, o.shardOf(g.Entry), "", func(it dynamoItem) bool {
			if it.entry.QueueURL == g.QueueURL && it.entry.GroupID == g.GroupID {
				g.Waiting++
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// parkedGroups returns the group keys of the parked partition.
func (o *Outbox) parkedGroups(ctx context.Context, api API) (map[string]bool, error) {
	parked := map[string]bool{}
	err := o.scan(ctx, api, stateParked, "", func(it dynamoItem) bool {
		if key := it.groupKey(); key != "" {
			parked[key] = true
		}
		return true
	})
	return parked, err
}

// count returns the number of items of one index partition (Select COUNT queries).
func (o *Outbox) count(ctx context.Context, api API, state string) (int, error) {
	total := 0
	var start map[string]types.AttributeValue
	for {
		output, err := api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(o.table),
			IndexName:                 aws.String(o.index),
			KeyConditionExpression:    aws.String("#s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": dynamoState},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(state)},
			Select:                    types.SelectCount,
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return 0, fmt.Errorf("outbox: counting %s index %s for %q: %w", o.table, o.index, state, err)
		}
		total += int(output.Count)
		if len(output.LastEvaluatedKey) == 0 {
			return total, nil
		}
		start = output.LastEvaluatedKey
	}
}

// outbox.Summary returns the outbox's counts from Select COUNT queries of the index's
// partitions. OldestUnpublished is the age (by the writer's clock) of the oldest entry
// first in line on its shard: an entry outside a FIFO group that waits for a retry is
// kept behind the entries due now and counts from its next attempt time.
func (o *Outbox) Summary(ctx context.Context, api API) (outbox.Summary, error) {
	var s outbox.Summary
	var oldest time.Time
	for shard := range o.shards {
		state := pendingPrefix + strconv.Itoa(shard)
		first, err := o.query(ctx, api, state, 1)
		if err != nil {
			return outbox.Summary{}, err
		}
		if len(first) == 0 {
			continue
		}
		if oldest.IsZero() || first[0].CreatedAt.Before(oldest) {
			oldest = first[0].CreatedAt
		}
		n, err := o.count(ctx, api, state)
		if err != nil {
			return outbox.Summary{}, err
		}
		s.Unpublished += n
	}
	if !oldest.IsZero() {
		s.OldestUnpublished = max(time.Since(oldest), 0)
	}
	failed, err := o.count(ctx, api, stateFailed)
	if err != nil {
		return outbox.Summary{}, err
	}
	parked, err := o.parkedCount(ctx, api)
	if err != nil {
		return outbox.Summary{}, err
	}
	s.Failed += failed + parked[0]
	s.ParkedGroups = parked[1]
	return s, nil
}

// parkedCount returns the number of parked entries and of parked groups.
func (o *Outbox) parkedCount(ctx context.Context, api API) ([2]int, error) {
	var n [2]int
	groups := map[string]bool{}
	err := o.scan(ctx, api, stateParked, "", func(it dynamoItem) bool {
		n[0]++
		if key := it.groupKey(); key != "" {
			groups[key] = true
		}
		return true
	})
	n[1] = len(groups)
	return n, err
}

// Backlog returns the number of unpublished entries and the age of the oldest (see
// [Outbox.Summary], which adds the failed entries and parked groups).
func (o *Outbox) Backlog(ctx context.Context, api API) (int, time.Duration, error) {
	s, err := o.Summary(ctx, api)
	return s.Unpublished, s.OldestUnpublished, err
}

// Operator returns the [outbox.Operator] of o read and written with api: o's Summary,
// Failed, Parked, Retry and Skip bound to api (for the CLI, the operations page, or a
// program's own tooling).
func (o *Outbox) Operator(api API) outbox.Operator { return operator{o, api} }

type operator struct {
	outbox *Outbox
	api    API
}

func (op operator) Summary(ctx context.Context) (outbox.Summary, error) {
	return op.outbox.Summary(ctx, op.api)
}

func (op operator) Failed(ctx context.Context, limit int) ([]outbox.Entry, error) {
	return op.outbox.Failed(ctx, op.api, limit)
}

func (op operator) Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error) {
	return op.outbox.Parked(ctx, op.api, limit)
}

func (op operator) Retry(ctx context.Context, id string) error {
	return op.outbox.Retry(ctx, op.api, id)
}

func (op operator) Skip(ctx context.Context, id string) error { return op.outbox.Skip(ctx, op.api, id) }
