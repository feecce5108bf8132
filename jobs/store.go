package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/table"
)

// DefaultTTL is Config.TTL when zero: a record expires 7 days after its last write.
const DefaultTTL = 7 * 24 * time.Hour

var (
	// ErrNotFound matches the error of [Store.Get] for a job with no record.
	ErrNotFound = errors.New("jobs: no record of the job")
	// ErrMalformedRecord matches the error for an item under a job's key that is not a
	// job record.
	ErrMalformedRecord = errors.New("jobs: the item is not a job record")
	// ErrFinished matches the [*FinishedError] of [Store.Cancel] for a finished job.
	ErrFinished = errors.New("jobs: the job has finished")
)

// FinishedError is the error of [Store.Cancel] for a job that has finished: nothing was
// changed.
type FinishedError struct {
	// Record is the job's record as Cancel found it.
	Record Record
}

// Error returns "jobs: job ID has already STATE; nothing to cancel".
func (e *FinishedError) Error() string {
	return fmt.Sprintf("jobs: job %s has already finished (%s); nothing to cancel", e.Record.ID, e.Record.State)
}

// Is reports true for [ErrFinished].
func (e *FinishedError) Is(target error) bool { return target == ErrFinished }

// Config configures a [Store].
type Config struct {
	// Table is the shared table's name (package table's schema). Required.
	Table string
	// TTL is how long a record is kept after its last write; if zero, DefaultTTL.
	TTL time.Duration
	// Now tells the time of the records' writes; if nil, time.Now.
	Now func() time.Time
	// Idempotency, when set, is the idempotency middleware's store, in which jobs run
	// with MiddlewareConfig.InIdempotencyRecord keep their state and result: [Store.Get]
	// and [Store.Cancel] read it too, under the job id as idempotency key with
	// IdempotencyKeyPrefix (the middleware's Config.KeyPrefix).
	Idempotency          idempotency.Store
	IdempotencyKeyPrefix string
	// LargeResults, when set, keeps results over MaxResultBytes in S3 and lets
	// [Store.Result] read them (see [LargeResults]); when nil, [SetResult] refuses them
	// with [ErrResultTooLarge].
	LargeResults *LargeResults
}

// Store reads and writes job records in the shared table. It is safe for concurrent use.
type Store struct {
	api    table.API
	config Config
}

// NewStore returns a Store on config.Table through api. Errors: a nil api, an empty
// table name, a negative TTL, a Config.LargeResults without a client or with a
// location claimcheck.Location.Validate refuses or a key prefix too long.
func NewStore(api table.API, config Config) (*Store, error) {
	switch {
	case api == nil:
		return nil, errors.New("jobs: NewStore with a nil DynamoDB client")
	case config.Table == "":
		return nil, errors.New("jobs: Config.Table is empty")
	case config.TTL < 0:
		return nil, fmt.Errorf("jobs: Config.TTL %s is negative", config.TTL)
	}
	if config.LargeResults != nil {
		if err := config.LargeResults.validate(); err != nil {
			return nil, err
		}
	}
	if config.TTL == 0 {
		config.TTL = DefaultTTL
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	return &Store{api: api, config: config}, nil
}

// key returns the record's key, or an error for an id that cannot make one.
func key(id string) (map[string]types.AttributeValue, error) {
	k, err := table.JobRecordKey(id)
	if err != nil {
		return nil, fmt.Errorf("jobs: job id %q: %w", id, err)
	}
	return table.KeyAttribute(k), nil
}

// expiration is the TTL attribute's value for a write at now.
func (s *Store) expiration(now time.Time) types.AttributeValue {
	return num(now.Add(s.config.TTL).Unix() + 1)
}

// Get returns the record of job id (a strongly consistent read; with
// Config.Idempotency, a second one of the job's idempotency record, whose state and
// result complete it). Errors: [ErrNotFound] when there is none (never recorded, or
// expired), [ErrMalformedRecord] for an item that is not a job record, the reads'
// errors.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	own, ownErr := s.get(ctx, id)
	if ownErr != nil && !errors.Is(ownErr, ErrNotFound) {
		return Record{}, ownErr
	}
	r, found, err := s.idempotencyRecord(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if !found {
		return own, ownErr
	}
	return merge(id, own, ownErr == nil, r), nil
}

// get reads the job's own record.
func (s *Store) get(ctx context.Context, id string) (Record, error) {
	k, err := key(id)
	if err != nil {
		return Record{}, err
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.config.Table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Record{}, fmt.Errorf("jobs: reading job %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return Record{}, fmt.Errorf("%w %s", ErrNotFound, id)
	}
	r, err := record(out.Item)
	if err != nil {
		return Record{}, fmt.Errorf("jobs: job %s: %w", id, err)
	}
	if r.ID != id { // the result's S3 key is checked against the id: the item must be the job's
		return Record{}, fmt.Errorf("jobs: job %s: %w: its job_id is %q", id, ErrMalformedRecord, r.ID)
	}
	if !r.ExpiresAt.IsZero() && r.ExpiresAt.Before(s.config.Now()) {
		return Record{}, fmt.Errorf("%w %s (expired %s)", ErrNotFound, id, r.ExpiresAt.Format(time.RFC3339))
	}
	return r, nil
}

// Enqueue records job id as enqueued (one PutItem), for a sender that wants the state
// before the first start; jobType and queueURL are recorded with it. A record that
// exists already is left as it is (the write is conditioned on there being none).
func (s *Store) Enqueue(ctx context.Context, id, jobType, queueURL string) error {
	k, err := key(id)
	if err != nil {
		return err
	}
	now := s.config.Now()
	item := map[string]types.AttributeValue{
		attrJobID: str(id), attrState: str(string(StateEnqueued)), attrEnqueued: millis(now),
		attrUpdated: millis(now), table.TTLAttribute: s.expiration(now), attrAttempts: num(0),
	}
	for name, value := range k {
		item[name] = value
	}
	if jobType != "" {
		item[attrType] = str(jobType)
	}
	if queueURL != "" {
		item[attrQueue] = str(queueURL)
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.config.Table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#id)"), ExpressionAttributeNames: names(table.PartitionKey),
	})
	if _, exists := errors.AsType[*types.ConditionalCheckFailedException](err); exists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: recording job %s as enqueued: %w", id, err)
	}
	return nil
}
