package batches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// CallbackJob is a callback to send when a batch finishes: Job to QueueURL. Its ID,
// UniqueKey, UniqueFor, UniqueMode and (when empty) IdempotencyKey are set by
// [Batches.Open]: the id is derived from the batch id and the kind
// ([producer.DerivedJobID]), the unique key is "batch:<batch id>:<kind>" for
// Config.Retention, and the idempotency key is the job id, so every send of it is one
// job.
type CallbackJob struct {
	QueueURL string
	Job      producer.Job
}

// Callbacks are a batch's callbacks; either may be nil.
type Callbacks struct {
	// Success is sent once every job of the batch has succeeded (Sidekiq Pro's and
	// GoodJob's "success"), counting a job that succeeded after a retry or a redrive.
	Success *CallbackJob
	// Complete is sent once every job has finished and at least one has not succeeded
	// (dead-lettered, its retries exhausted, or cancelled). If such a job is later
	// redriven and succeeds, so that every job has succeeded, Success is sent too.
	Complete *CallbackJob
}

// Batch is an open batch: add jobs to it, then seal it.
type Batch struct {
	batches *Batches
	ref     ref
	inJob   bool // from FromContext: its job is pending while it adds
}

// ID returns the batch id (a ULID).
func (b *Batch) ID() string { return b.ref.id }

// Open creates a batch with callbacks: its item and its Config.Shards counter items, in
// one TransactWriteItems (1 + Shards items; DynamoDB bills 2 writes per item of a
// transaction). The callbacks are checked and encoded now ([producer.Prepare]): an invalid
// one fails Open and writes nothing, as does a batch item past DynamoDB's 400 KB.
func (b *Batches) Open(ctx context.Context, callbacks Callbacks) (*Batch, error) {
	now := b.config.Now()
	r := ref{id: ulidAt(now), token: newToken(), shards: b.config.Shards}
	expires := now.Add(b.config.Retention)
	metaKey, err := table.BatchKey(r.id)
	if err != nil {
		return nil, err
	}
	item := map[string]types.AttributeValue{
		table.PartitionKey: s(metaKey), attrToken: s(r.token), attrShards: n(int64(r.shards)),
		attrCreated: n(now.UnixMilli()), attrSealed: &types.AttributeValueMemberBOOL{Value: false},
		table.TTLAttribute: n(expires.Unix()),
	}
	for name, cb := range map[string]*CallbackJob{"success": callbacks.Success, "complete": callbacks.Complete} {
		if cb == nil {
			continue
		}
		p, err := b.prepareCallback(r.id, name, now, *cb)
		if err != nil {
			return nil, err
		}
		encoded, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("batches: encoding the %s callback: %w", name, err)
		}
		item[map[string]string{"success": attrSuccess, "complete": attrComplete}[name]] = s(string(encoded))
	}
	if size := table.ItemSize(item); size > table.MaxItemBytes {
		return nil, fmt.Errorf("batches: the batch item with its callbacks is %d bytes; DynamoDB's item limit is %d", size, table.MaxItemBytes)
	}
	notExists := aws.String("attribute_not_exists(#id)")
	idName := map[string]string{"#id": table.PartitionKey}
	actions := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(b.config.Table), Item: item, ConditionExpression: notExists, ExpressionAttributeNames: idName}}}
	for i := range r.shards {
		key, err := table.BatchShardKey(r.id, i)
		if err != nil {
			return nil, err
		}
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(b.config.Table), Item: map[string]types.AttributeValue{
			table.PartitionKey: s(key), attrToken: s(r.token), attrAdded: n(0), attrPending: n(0), attrSucceeded: n(0), attrDead: n(0),
			table.TTLAttribute: n(expires.Unix()),
		}, ConditionExpression: notExists, ExpressionAttributeNames: idName}})
	}
	err = txjoin.RetryConflicts(ctx, func() error {
		_, err := b.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("batches: opening batch %s: %w", r.id, err)
	}
	return &Batch{batches: b, ref: r}, nil
}

func (b *Batches) prepareCallback(id, kind string, now time.Time, cb CallbackJob) (producer.Prepared, error) {
	job := cb.Job
	if job.ID != "" || job.UniqueKey != "" {
		return producer.Prepared{}, fmt.Errorf("batches: the %s callback sets Job.ID or Job.UniqueKey, which Open derives from the batch id", kind)
	}
	name := "batch:" + id + ":" + kind
	job.ID = producer.DerivedJobID(now, name)
	job.UniqueKey, job.UniqueFor, job.UniqueMode = name, b.config.Retention, producer.UniqueUntilWindowEnds
	if job.IdempotencyKey == "" {
		job.IdempotencyKey = job.ID
	}
	job.Attributes = maps.Clone(job.Attributes)
	if job.Attributes == nil {
		job.Attributes = map[string]sqstypes.MessageAttributeValue{}
	}
	job.Attributes[AttributeBatchCallback] = stringAttribute(id + ":" + kind)
	p, err := producer.Prepare(cb.QueueURL, job)
	if err != nil {
		return producer.Prepared{}, fmt.Errorf("batches: the %s callback: %w", kind, err)
	}
	// A callback is sent once by its unique key: a producer that cannot enforce it on a
	// standard queue would fail only at the batch's last job's end, after all the work.
	if u, ok := b.sender.(uniqueEnforcer); ok && !u.EnforcesUniqueKeys() && !strings.HasSuffix(cb.QueueURL, ".fifo") {
		return producer.Prepared{}, fmt.Errorf("batches: the %s callback goes to a standard queue and the producer has no Config.Unique: %w", kind, producer.ErrNoUniqueStore)
	}
	return p, nil
}

// uniqueEnforcer is the part of *producer.Producer that says whether it enforces unique
// keys; a Sender without it is trusted to.
type uniqueEnforcer interface{ EnforcesUniqueKeys() bool }

// Load returns a handle on batch id, opened earlier (by another process, say), to add
// jobs to it or seal it: one consistent GetItem. Its errors are those of [Batches.Get].
func (b *Batches) Load(ctx context.Context, id string) (*Batch, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	m, err := b.readMeta(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Batch{batches: b, ref: ref{id: id, token: m.token, shards: m.shards}}, nil
}

// AddError is the error of [Batch.Add] when some jobs were not sent. They were counted
// before the send and withdrawn after it (each job's marker written as withdrawn with
// its shard's pending count lowered, one TransactWriteItems each), so the batch does not
// wait for them; if SQS did take one whose send reported a failure, it runs but is not
// counted. Add them again (new ids) to have them in the batch.
type AddError struct {
	// Failed maps the index of each job not sent (in Add's jobs) to its error.
	Failed map[int]error
	// Withdrawn is how many of them were withdrawn; the rest are still counted as
	// pending (their withdrawal failed, see Err).
	Withdrawn int
	// Err joins the send errors and any withdrawal error.
	Err error
}

// Error returns "batches: N of the jobs were not sent: ...".
func (e *AddError) Error() string {
	return fmt.Sprintf("batches: %d of the jobs were not sent (%d withdrawn from the batch): %v", len(e.Failed), e.Withdrawn, e.Err)
}

// Unwrap returns the joined errors.
func (e *AddError) Unwrap() error { return e.Err }

// Add adds jobs, bound for queueURL, to the batch and sends them, and returns their job
// ids in order. Each job gets an id when it has none ([producer.NewJobID]) and the
// [AttributeBatch] attribute (so it needs one of SQS's 10 attributes free).
//
// The counts are raised BEFORE anything is sent, so a job of the batch that adds
// children before it returns keeps the batch from finishing until they have finished
// too (its own end comes after the raise). From a batch job's handler (the batch of
// [FromContext]) the raise is one UpdateItem when every job falls on one shard, else one
// TransactWriteItems over the shards they fall on. From anywhere else (a batch of
// [Batches.Open] or [Batches.Load]) Add is refused once the batch is sealed
// ([ErrSealed]), in the same transaction as the raise (a condition check on the batch
// item, so one TransactWriteItems): after [Batch.Seal] the batch may finish at any
// moment, and jobs added from outside then could be counted after its callback was
// sent. Sidekiq Pro and GoodJob say the same: reopen a batch from its own jobs.
//
// Before counting, Add reads the batch item (one consistent GetItem) and refuses a
// batch whose success callback was sent ([ErrFinished]).
//
// Errors: an invalid job (those of [producer.Prepare]) or one that sets AttributeBatch
// itself fails Add before anything is counted; a batch that is gone (past its
// retention) matches [ErrNotFound], a finished one [ErrFinished], a sealed one from
// outside [ErrSealed]; jobs not sent give an [*AddError].
func (bt *Batch) Add(ctx context.Context, queueURL string, jobs ...producer.Job) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	prepared := make([]producer.Prepared, len(jobs))
	ids := make([]string, len(jobs))
	perShard := map[int]int64{}
	for i, job := range jobs {
		if _, set := job.Attributes[AttributeBatch]; set {
			return nil, fmt.Errorf("batches: job %d sets the %q attribute, which Add sets", i, AttributeBatch)
		}
		job.Attributes = maps.Clone(job.Attributes)
		if job.Attributes == nil {
			job.Attributes = map[string]sqstypes.MessageAttributeValue{}
		}
		job.Attributes[AttributeBatch] = stringAttribute(bt.ref.String())
		p, err := producer.Prepare(queueURL, job)
		if err != nil {
			return nil, fmt.Errorf("batches: job %d: %w", i, err)
		}
		prepared[i], ids[i] = p, p.JobID()
		if _, err := table.BatchJobKey(bt.ref.id, ids[i]); err != nil {
			return nil, fmt.Errorf("batches: job %d: %w", i, err)
		}
		perShard[shardOf(ids[i], bt.ref.shards)]++
	}
	m, err := bt.batches.readMeta(ctx, bt.ref.id)
	if err != nil {
		return nil, err
	}
	if !m.successFired.IsZero() {
		return nil, fmt.Errorf("%w: batch %s, success sent %s", ErrFinished, bt.ref.id, m.successFired.UTC().Format(time.RFC3339))
	}
	if m.sealed && !bt.inJob {
		return nil, fmt.Errorf("%w: batch %s", ErrSealed, bt.ref.id)
	}
	if err := bt.batches.raise(ctx, bt.ref, perShard, !bt.inJob); err != nil {
		return nil, err
	}
	results, sendErr := bt.batches.sender.SendPreparedBatch(ctx, prepared)
	if sendErr == nil {
		return ids, nil
	}
	addErr := &AddError{Failed: map[int]error{}}
	errs := []error{sendErr}
	for i := range prepared {
		var failed error
		switch {
		case i >= len(results): // no result: not known to be sent
			failed = sendErr
		case results[i].Err != nil:
			failed = results[i].Err
		default:
			continue
		}
		addErr.Failed[i] = failed
		if _, err := bt.batches.count(context.WithoutCancel(ctx), bt.ref, ids[i], endWithdrawn, nil); err != nil {
			errs = append(errs, fmt.Errorf("withdrawing job %s: %w", ids[i], err))
			continue
		}
		addErr.Withdrawn++
	}
	if err := bt.batches.check(context.WithoutCancel(ctx), bt.ref.id); err != nil {
		errs = append(errs, err)
	}
	addErr.Err = errors.Join(errs...)
	return ids, addErr
}

// raise adds perShard[shard] jobs to each shard's added and pending counts; unsealed
// puts a check that the batch is not sealed in the same transaction.
func (b *Batches) raise(ctx context.Context, r ref, perShard map[int]int64, unsealed bool) error {
	now := b.config.Now()
	var updates []*types.Update
	for shard, k := range perShard {
		key, err := table.BatchShardKey(r.id, shard)
		if err != nil {
			return err
		}
		updates = append(updates, &types.Update{
			TableName: aws.String(b.config.Table), Key: table.KeyAttribute(key),
			UpdateExpression:         aws.String("ADD #added :k, #pending :k"),
			ConditionExpression:      aws.String("#token = :token AND #exp > :now"),
			ExpressionAttributeNames: map[string]string{"#added": attrAdded, "#pending": attrPending, "#token": attrToken, "#exp": table.TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":k": n(k), ":token": s(r.token), ":now": n(now.Unix()),
			},
		})
	}
	var actions []types.TransactWriteItem
	if unsealed {
		metaKey, err := table.BatchKey(r.id)
		if err != nil {
			return err
		}
		actions = append(actions, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(b.config.Table), Key: table.KeyAttribute(metaKey),
			ConditionExpression:       aws.String("#token = :token AND #sealed = :false"),
			ExpressionAttributeNames:  map[string]string{"#token": attrToken, "#sealed": attrSealed},
			ExpressionAttributeValues: map[string]types.AttributeValue{":token": s(r.token), ":false": &types.AttributeValueMemberBOOL{Value: false}},
		}})
	}
	for _, u := range updates {
		actions = append(actions, types.TransactWriteItem{Update: u})
	}
	err := txjoin.RetryConflicts(ctx, func() error {
		if len(actions) == 1 {
			u := updates[0]
			_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
				ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues})
			return err
		}
		_, err := b.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
		return err
	})
	if unsealed && failedConditions(err)[0] {
		return fmt.Errorf("%w: batch %s (sealed since Add read it)", ErrSealed, r.id)
	}
	if conditionFailed(err) {
		return fmt.Errorf("%w: batch %s (expired, or the token does not match)", ErrNotFound, r.id)
	}
	if err != nil {
		return fmt.Errorf("batches: raising the counts of batch %s: %w", r.id, err)
	}
	return nil
}

// Seal says no more jobs will be added from outside the batch: from now on the batch
// finishes when its pending count is zero, at once for an empty batch (Seal then
// sends the success callback itself). One UpdateItem, then the check of
// [Batches.Get]'s reads. An error after the update (a failed check or callback send)
// leaves the batch sealed; call Seal again to check again.
func (bt *Batch) Seal(ctx context.Context) error {
	key, err := table.BatchKey(bt.ref.id)
	if err != nil {
		return err
	}
	seal := &dynamodb.UpdateItemInput{
		TableName: aws.String(bt.batches.config.Table), Key: table.KeyAttribute(key),
		UpdateExpression:          aws.String("SET #sealed = :true"),
		ConditionExpression:       aws.String("#token = :token AND #exp > :now"),
		ExpressionAttributeNames:  map[string]string{"#sealed": attrSealed, "#token": attrToken, "#exp": table.TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}, ":token": s(bt.ref.token), ":now": n(bt.batches.config.Now().Unix())},
	}
	err = txjoin.RetryConflicts(ctx, func() error {
		_, err := bt.batches.api.UpdateItem(ctx, seal)
		return err
	})
	if conditionFailed(err) {
		return fmt.Errorf("%w: batch %s (expired, or the token does not match)", ErrNotFound, bt.ref.id)
	}
	if err != nil {
		return fmt.Errorf("batches: sealing batch %s: %w", bt.ref.id, err)
	}
	return bt.batches.check(ctx, bt.ref.id)
}

// ErrFinished matches the error of [Batch.Add] on a batch whose success callback has
// been sent: every job of it succeeded, and nothing waits for more.
var ErrFinished = errors.New("batches: the batch has finished")

// ErrSealed matches the error of [Batch.Add] called from outside the batch's jobs on a
// sealed batch. Nothing was counted or sent. Add from a job of the batch instead (the
// batch of [FromContext]), or open another batch.
var ErrSealed = errors.New("batches: the batch is sealed; only its jobs may add to it")

type batchKey struct{}

// FromContext returns the batch of the job a handler runs (set by [Batches.Middleware]),
// to add jobs to it, and false outside a batch job.
func FromContext(ctx context.Context) (*Batch, bool) {
	b, ok := ctx.Value(batchKey{}).(*Batch)
	return b, ok
}

func conditionFailed(err error) bool {
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return true
	}
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		for _, reason := range canceled.CancellationReasons {
			if aws.ToString(reason.Code) == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}

func stringAttribute(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
