package outboxdynamo

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// MaxTransactItems is the most items one DynamoDB TransactWriteItems call may carry
// (the business items and the outbox entries together), from the DynamoDB API
// Reference ("TransactWriteItems": "up to 100 action requests"). Beyond it DynamoDB
// rejects the whole call with a ValidationException; [Outbox.TransactItems] refuses
// first, with [ErrTooManyItems]. DynamoDB also limits a transaction to 4 MB in all and
// an item to 400 KB (checked per entry by [Outbox.Put]).
const MaxTransactItems = 100

// ErrTooManyItems is returned (wrapped) by [Outbox.TransactItems] when the business
// items and the outbox entries together exceed [MaxTransactItems]: split the work into
// several transactions, each with its own entries.
var ErrTooManyItems = errors.New("outbox: more items than one DynamoDB transaction may carry")

// DynamoDB table layout: attribute names of an outbox entry item.
const (
	dynamoKey       = "id"
	dynamoState     = "outbox_state"
	dynamoSeq       = "outbox_seq"
	dynamoQueue     = "queue_url"
	dynamoJob       = "job" // the job's stored form (producer.Prepared's JSON form)
	dynamoGroup     = "group_id"
	dynamoCreated   = "created_ms"
	dynamoFailedAt  = "failed_ms"
	dynamoReason    = "failure_reason"
	dynamoAttempts  = "attempts"
	dynamoNext      = "next_attempt_ms"
	dynamoLastError = "last_error"
	dynamoClaimEnd  = "claimed_until_ms" // a relay's claim: until when (Unix ms)
	dynamoClaimBy   = "claim_token"      // and whose (one random token per claim)
	dynamoShard     = "pending_shard"    // a failed entry's pending partition, for Retry
	pendingPrefix   = "pending#"
	stateFailed     = "failed"   // failed entries not of a FIFO group
	stateParked     = "parked"   // failed entries of FIFO groups: each parks its group
	dynamoItemLimit = 400 * 1024 // DynamoDB's item size limit (400 KB)
)

// DefaultIndex is the name of the sparse global secondary index of unpublished and
// failed entries: partitions "pending#0"... (unpublished, by shard), "failed" and
// "parked" (failed entries of FIFO message groups), each in outbox_seq order.
const DefaultIndex = "outbox-state"

// Config configures a [Outbox] outbox.
type Config struct {
	// Table is the outbox table: string partition key "id", no sort key, the index below
	// ([Outbox.CreateTableInput] creates it). A table of its own is best (its stream
	// then carries only outbox entries); TransactWriteItems spans tables, so the entries
	// still commit with the business items.
	Table string
	// Index is the sparse global secondary index on (outbox_state, outbox_seq); if empty,
	// DefaultIndex. Only outbox entries have outbox_state, and published entries are
	// deleted, so the index holds just the unpublished and the failed ones. outbox_seq
	// starts with 12 hex digits of Unix milliseconds: the creation time, or for an entry
	// outside a FIFO group that waits for a retry, its next attempt time (so it waits
	// behind the entries due now).
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

// Outbox writes outbox entries for DynamoDB transactions and reads them back for the
// relays. It is safe for concurrent use.
type Outbox struct {
	table, index string
	shards       int
	now          func() time.Time
	seq          atomic.Uint64
}

// New returns the outbox of config.Table. It returns an error for an empty table
// or negative Shards.
func New(config Config) (*Outbox, error) {
	var errs []error
	if config.Table == "" {
		errs = append(errs, errors.New("outbox: Config.Table is empty"))
	}
	if config.Shards < 0 || config.Shards > 1000 {
		errs = append(errs, fmt.Errorf("outbox: Config.Shards %d is outside 0 to 1000", config.Shards))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o := &Outbox{table: config.Table, index: config.Index, shards: config.Shards, now: config.Now}
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
func (o *Outbox) Table() string { return o.table }

// CreateTableInput returns the CreateTable request of an on-demand outbox table named
// config.Table, with its sparse index and a stream of new images (for [StreamHandler]).
func (o *Outbox) CreateTableInput() *dynamodb.CreateTableInput {
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
// entry, and the entry. The job is checked now, by [producer.Prepare] (a FIFO job
// without GroupID, both or neither of Payload and Body, a DeduplicationID on a standard
// queue are errors); whether SQS accepts its size, and a unique key's reservation, are
// decided when the relay sends it (a unique job on a standard queue needs the relay
// producer's Config.Unique; a key already taken publishes the entry without a send). An
// entry above DynamoDB's 400 KB item limit is an error here.
func (o *Outbox) Put(queueURL string, job producer.Job) (types.TransactWriteItem, outbox.Entry, error) {
	entry, err := outbox.NewEntry(queueURL, job, o.now())
	if err != nil {
		return types.TransactWriteItem{}, outbox.Entry{}, err
	}
	item, err := o.item(entry)
	if err != nil {
		return types.TransactWriteItem{}, outbox.Entry{}, err
	}
	// No condition: the id is random (80 bits past the millisecond), and an
	// unconditional Put keeps a retried TransactWriteItems harmless where the store does
	// not honour its ClientRequestToken.
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(o.table), Item: item}}, entry, nil
}

// TransactItems returns items followed by one outbox entry per job (all bound for
// queueURL), ready for the caller's own TransactWriteItems call, and the entries in the
// same order. It returns an error wrapping [ErrTooManyItems] when len(items)+len(jobs)
// exceeds [MaxTransactItems] (100), and the first job's error from [Outbox.Put]
// (naming its index); items is never changed.
func (o *Outbox) TransactItems(items []types.TransactWriteItem, queueURL string, jobs ...producer.Job) ([]types.TransactWriteItem, []outbox.Entry, error) {
	if total := len(items) + len(jobs); total > MaxTransactItems {
		return nil, nil, fmt.Errorf("%w: %d business items and %d outbox entries are %d, DynamoDB allows %d per TransactWriteItems call",
			ErrTooManyItems, len(items), len(jobs), total, MaxTransactItems)
	}
	all := make([]types.TransactWriteItem, len(items), len(items)+len(jobs))
	copy(all, items)
	entries := make([]outbox.Entry, len(jobs))
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
func (o *Outbox) item(e outbox.Entry) (map[string]types.AttributeValue, error) {
	job, err := e.EncodeJob()
	if err != nil {
		return nil, err
	}
	item := map[string]types.AttributeValue{
		dynamoKey:     str(e.ID),
		dynamoState:   str(o.shardOf(e)),
		dynamoSeq:     str(seqKey(e.CreatedAt, fmt.Sprintf("%012x%s", o.seq.Add(1), e.ID))),
		dynamoQueue:   str(e.QueueURL),
		dynamoJob:     str(job),
		dynamoCreated: num(e.CreatedAt.UnixMilli()),
	}
	if e.GroupID != "" {
		item[dynamoGroup] = str(e.GroupID)
	}
	if size := len(job) + len(e.QueueURL) + 512; size > dynamoItemLimit {
		return nil, fmt.Errorf("outbox: the entry is about %d bytes, above DynamoDB's item limit of 400 KB; offload the payload (for example to S3) and enqueue a reference", size)
	}
	return item, nil
}

// shardOf returns the index partition of e: its message group's (or its id's) shard.
func (o *Outbox) shardOf(e outbox.Entry) string {
	if o.shards == 1 {
		return pendingPrefix + "0"
	}
	key := e.GroupID
	if key == "" {
		key = e.ID
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	// shards is 1 to 1000 (New), and so is the remainder's bound.
	return pendingPrefix + strconv.FormatUint(uint64(h.Sum32())%uint64(max(o.shards, 1)), 10)
}
