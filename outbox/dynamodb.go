package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/producer"
)

// MaxTransactItems is the most items one DynamoDB TransactWriteItems call may carry
// (the business items and the outbox entries together), from the DynamoDB API
// Reference ("TransactWriteItems": "up to 100 action requests"). Beyond it DynamoDB
// rejects the whole call with a ValidationException; [DynamoDB.TransactItems] refuses
// first, with [ErrTooManyItems]. DynamoDB also limits a transaction to 4 MB in all and
// an item to 400 KB (checked per entry by [DynamoDB.Put]).
const MaxTransactItems = 100

// ErrTooManyItems is returned (wrapped) by [DynamoDB.TransactItems] when the business
// items and the outbox entries together exceed [MaxTransactItems]: split the work into
// several transactions, each with its own entries.
var ErrTooManyItems = errors.New("outbox: more items than one DynamoDB transaction may carry")

// DynamoDB table layout: attribute names of an outbox entry item.
const (
	dynamoKey       = "id"
	dynamoState     = "outbox_state"
	dynamoSeq       = "outbox_seq"
	dynamoQueue     = "queue_url"
	dynamoBody      = "body"
	dynamoType      = "job_type"
	dynamoGroup     = "group_id"
	dynamoIdemKey   = "idempotency_key"
	dynamoDelay     = "delay_seconds"
	dynamoAttrs     = "attributes"
	dynamoCreated   = "created_ms"
	dynamoFailedAt  = "failed_ms"
	dynamoReason    = "failure_reason"
	pendingPrefix   = "pending#"
	stateFailed     = "failed"
	dynamoItemLimit = 400 * 1024 // DynamoDB's item size limit (400 KB)
)

// DefaultIndex is the name of the sparse global secondary index of unpublished and
// failed entries.
const DefaultIndex = "outbox-state"

// DynamoDBConfig configures a [DynamoDB] outbox.
type DynamoDBConfig struct {
	// Table is the outbox table: string partition key "id", no sort key, the index below
	// ([DynamoDB.CreateTableInput] creates it). A table of its own is best (its stream
	// then carries only outbox entries); TransactWriteItems spans tables, so the entries
	// still commit with the business items.
	Table string
	// Index is the sparse global secondary index on (outbox_state, outbox_seq); if empty,
	// DefaultIndex. Only outbox entries have outbox_state, and published entries are
	// deleted, so the index holds just the unpublished and the failed ones.
	Index string
	// Shards spreads unpublished entries over this many index partitions
	// ("pending#0"...); if zero, 1. One partition serves about 1,000 writes per second;
	// raise it above that rate. A message group always lands on one shard (its order is
	// kept). Writers and relays must use the same value; it may be raised later, never
	// lowered (entries on a shard at or above a lowered Shards would not be read).
	Shards int
	// Now is the clock of entry ids and creation times; if nil, time.Now.
	Now func() time.Time
}

// DynamoDB writes outbox entries for DynamoDB transactions and reads them back for the
// relays. It is safe for concurrent use.
type DynamoDB struct {
	table, index string
	shards       int
	now          func() time.Time
	seq          atomic.Uint64
}

// NewDynamoDB returns the outbox of config.Table. It returns an error for an empty table
// or negative Shards.
func NewDynamoDB(config DynamoDBConfig) (*DynamoDB, error) {
	var errs []error
	if config.Table == "" {
		errs = append(errs, errors.New("outbox: DynamoDBConfig.Table is empty"))
	}
	if config.Shards < 0 || config.Shards > 1000 {
		errs = append(errs, fmt.Errorf("outbox: DynamoDBConfig.Shards %d is outside 0 to 1000", config.Shards))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o := &DynamoDB{table: config.Table, index: config.Index, shards: config.Shards, now: config.Now}
	if o.index == "" {
		o.index = DefaultIndex
	}
	if o.shards == 0 {
		o.shards = 1
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o, nil
}

// Table returns the outbox table's name.
func (o *DynamoDB) Table() string { return o.table }

// CreateTableInput returns the CreateTable request of an on-demand outbox table named
// config.Table, with its sparse index and a stream of new images (for [StreamHandler]).
func (o *DynamoDB) CreateTableInput() *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(o.table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(dynamoKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(dynamoState), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(dynamoSeq), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(dynamoKey), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(o.index),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(dynamoState), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(dynamoSeq), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
	}
}

// Put returns the TransactWriteItem that writes job, bound for queueURL, as an outbox
// entry, and the entry. The job is checked now (a FIFO job without GroupID, both or
// neither of Payload and Body, UniqueKey or DeduplicationID set, Binary attributes are
// errors); whether SQS accepts its size is known only when the relay sends it. An entry
// above DynamoDB's 400 KB item limit is an error here.
func (o *DynamoDB) Put(queueURL string, job producer.Job) (types.TransactWriteItem, Entry, error) {
	entry, err := newEntry(queueURL, job, o.now())
	if err != nil {
		return types.TransactWriteItem{}, Entry{}, err
	}
	item, err := o.item(entry)
	if err != nil {
		return types.TransactWriteItem{}, Entry{}, err
	}
	// No condition: the id is random (80 bits past the millisecond), and an
	// unconditional Put keeps a retried TransactWriteItems harmless where the store does
	// not honour its ClientRequestToken.
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(o.table), Item: item}}, entry, nil
}

// TransactItems returns items followed by one outbox entry per job (all bound for
// queueURL), ready for the caller's own TransactWriteItems call, and the entries in the
// same order. It returns an error wrapping [ErrTooManyItems] when len(items)+len(jobs)
// exceeds [MaxTransactItems] (100), and the first job's error from [DynamoDB.Put]
// (naming its index); items is never changed.
func (o *DynamoDB) TransactItems(items []types.TransactWriteItem, queueURL string, jobs ...producer.Job) ([]types.TransactWriteItem, []Entry, error) {
	if total := len(items) + len(jobs); total > MaxTransactItems {
		return nil, nil, fmt.Errorf("%w: %d business items and %d outbox entries are %d, DynamoDB allows %d per TransactWriteItems call",
			ErrTooManyItems, len(items), len(jobs), total, MaxTransactItems)
	}
	all := make([]types.TransactWriteItem, len(items), len(items)+len(jobs))
	copy(all, items)
	entries := make([]Entry, len(jobs))
	for i, job := range jobs {
		put, entry, err := o.Put(queueURL, job)
		if err != nil {
			return nil, nil, fmt.Errorf("outbox: job %d: %w", i, err)
		}
		all = append(all, put)
		entries[i] = entry
	}
	return all, entries, nil
}

// item encodes entry as a pending item.
func (o *DynamoDB) item(e Entry) (map[string]types.AttributeValue, error) {
	item := map[string]types.AttributeValue{
		dynamoKey:     str(e.ID),
		dynamoState:   str(o.shardOf(e)),
		dynamoSeq:     str(fmt.Sprintf("%012x%012x%s", e.CreatedAt.UnixMilli(), o.seq.Add(1), e.ID)),
		dynamoQueue:   str(e.QueueURL),
		dynamoBody:    str(e.Body),
		dynamoIdemKey: str(e.IdempotencyKey),
		dynamoCreated: num(e.CreatedAt.UnixMilli()),
	}
	if e.Type != "" {
		item[dynamoType] = str(e.Type)
	}
	if e.GroupID != "" {
		item[dynamoGroup] = str(e.GroupID)
	}
	if e.Delay > 0 {
		item[dynamoDelay] = num(int64(e.Delay / time.Second))
	}
	if len(e.Attributes) > 0 {
		encoded, err := json.Marshal(e.Attributes)
		if err != nil {
			return nil, fmt.Errorf("outbox: encoding attributes: %w", err)
		}
		item[dynamoAttrs] = str(string(encoded))
	}
	if size := len(e.Body) + len(e.QueueURL) + 512; size > dynamoItemLimit {
		return nil, fmt.Errorf("outbox: the entry is about %d bytes, above DynamoDB's item limit of 400 KB; offload the payload (for example to S3) and enqueue a reference", size)
	}
	return item, nil
}

// shardOf returns the index partition of e: its message group's (or its id's) shard.
func (o *DynamoDB) shardOf(e Entry) string {
	if o.shards == 1 {
		return pendingPrefix + "0"
	}
	key := e.GroupID
	if key == "" {
		key = e.ID
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return pendingPrefix + strconv.Itoa(int(h.Sum32()%uint32(o.shards)))
}

// decodeEntry reads an entry from an item's string and number attributes (an SDK item
// or a stream image). ok is false when the item is not a pending or failed outbox entry.
func decodeEntry(get func(name string) (string, bool)) (entry Entry, state string, ok bool, err error) {
	state, _ = get(dynamoState)
	if !strings.HasPrefix(state, pendingPrefix) && state != stateFailed {
		return Entry{}, "", false, nil
	}
	entry.ID, _ = get(dynamoKey)
	entry.QueueURL, _ = get(dynamoQueue)
	entry.Body, _ = get(dynamoBody)
	entry.Type, _ = get(dynamoType)
	entry.GroupID, _ = get(dynamoGroup)
	entry.IdempotencyKey, _ = get(dynamoIdemKey)
	entry.FailureReason, _ = get(dynamoReason)
	number := func(name string) int64 {
		text, _ := get(name)
		n, _ := strconv.ParseInt(text, 10, 64)
		return n
	}
	entry.Delay = time.Duration(number(dynamoDelay)) * time.Second
	entry.CreatedAt = time.UnixMilli(number(dynamoCreated))
	if failed := number(dynamoFailedAt); failed > 0 {
		entry.FailedAt = time.UnixMilli(failed)
	}
	if text, has := get(dynamoAttrs); has {
		if err := json.Unmarshal([]byte(text), &entry.Attributes); err != nil {
			return entry, state, true, fmt.Errorf("outbox: entry %s: attributes: %w", entry.ID, err)
		}
	}
	if entry.ID == "" || entry.QueueURL == "" || entry.Body == "" {
		return entry, state, true, fmt.Errorf("outbox: item %q is an outbox entry without id, queue_url or body", entry.ID)
	}
	return entry, state, true, nil
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

// DynamoDBAPI is the part of the DynamoDB client the relays and [DynamoDB.Failed] use;
// *dynamodb.Client satisfies it.
type DynamoDBAPI interface {
	Query(ctx context.Context, input *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	BatchWriteItem(ctx context.Context, input *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Failed returns up to limit failed entries (oldest first, by creation), with their
// reasons: the entries SQS refused. It queries the index's "failed" partition.
func (o *DynamoDB) Failed(ctx context.Context, api DynamoDBAPI, limit int) ([]Entry, error) {
	return o.query(ctx, api, stateFailed, limit)
}

// query reads up to limit entries of one index partition, in outbox_seq order.
func (o *DynamoDB) query(ctx context.Context, api DynamoDBAPI, state string, limit int) ([]Entry, error) {
	var entries []Entry
	var start map[string]types.AttributeValue
	for len(entries) < limit {
		output, err := api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(o.table),
			IndexName:                 aws.String(o.index),
			KeyConditionExpression:    aws.String("#s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": dynamoState},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(state)},
			Limit:                     aws.Int32(int32(limit - len(entries))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return entries, fmt.Errorf("outbox: querying %s index %s for %q: %w", o.table, o.index, state, err)
		}
		for _, item := range output.Items {
			entry, _, ok, err := decodeEntry(sdkGetter(item))
			if err != nil {
				return entries, err
			}
			if ok {
				entries = append(entries, entry)
			}
		}
		if len(output.LastEvaluatedKey) == 0 {
			break
		}
		start = output.LastEvaluatedKey
	}
	return entries, nil
}

// countPending returns the number of unpublished entries and the creation time of the
// oldest (zero when none), from Select COUNT queries of every shard.
func (o *DynamoDB) countPending(ctx context.Context, api DynamoDBAPI) (int, time.Time, error) {
	total := 0
	var oldest time.Time
	for shard := range o.shards {
		state := pendingPrefix + strconv.Itoa(shard)
		first, err := o.query(ctx, api, state, 1)
		if err != nil {
			return 0, time.Time{}, err
		}
		if len(first) == 0 {
			continue
		}
		if oldest.IsZero() || first[0].CreatedAt.Before(oldest) {
			oldest = first[0].CreatedAt
		}
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
				return 0, time.Time{}, fmt.Errorf("outbox: counting %s index %s: %w", o.table, o.index, err)
			}
			total += int(output.Count)
			if len(output.LastEvaluatedKey) == 0 {
				break
			}
			start = output.LastEvaluatedKey
		}
	}
	return total, oldest, nil
}

// remove deletes published entries with BatchWriteItem (25 per call), sending
// unprocessed items again.
func (o *DynamoDB) remove(ctx context.Context, api DynamoDBAPI, ids []string) error {
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

// markFailed moves an entry to the index's "failed" partition with the reason; it does
// nothing when the entry is gone (already published by another relay).
func (o *DynamoDB) markFailed(ctx context.Context, api DynamoDBAPI, id string, reason error) error {
	_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 map[string]types.AttributeValue{dynamoKey: str(id)},
		ConditionExpression: aws.String("attribute_exists(#id)"),
		UpdateExpression:    aws.String("SET #s = :failed, #r = :r, #f = :f"),
		ExpressionAttributeNames: map[string]string{
			"#id": dynamoKey, "#s": dynamoState, "#r": dynamoReason, "#f": dynamoFailedAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":failed": str(stateFailed), ":r": str(truncate(reason.Error(), 4000)), ":f": num(o.now().UnixMilli()),
		},
	})
	if _, gone := errors.AsType[*types.ConditionalCheckFailedException](err); gone {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox: marking entry %s failed in %s: %w", id, o.table, err)
	}
	return nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
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

// Backlog returns the number of unpublished entries and the age of the oldest (by its
// creation time on the writer's clock; 0 when none), from Select COUNT queries of the
// index's pending partitions.
func (o *DynamoDB) Backlog(ctx context.Context, api DynamoDBAPI) (int, time.Duration, error) {
	count, oldest, err := o.countPending(ctx, api)
	if err != nil || oldest.IsZero() {
		return count, 0, err
	}
	return count, max(time.Since(oldest), 0), nil
}
