package batches

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/table"
)

// API is the part of the DynamoDB client that batches use: the shared table's
// single-item calls ([table.API]), TransactWriteItems, which makes a job's marker and
// its counter decrement one atomic write, and TransactGetItems, which reads a batch's
// item and all its shards as of one instant. *dynamodb.Client satisfies it.
type API interface {
	table.API
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(ctx context.Context, params *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Sender sends a batch's jobs and its callbacks; *producer.Producer satisfies it. The
// producer must enforce unique keys on the callbacks' queues (producer.Config.Unique on a
// standard queue; a FIFO queue uses the deduplication id, whose interval is 5 minutes):
// a callback is sent once because its unique key is derived from the batch id.
type Sender interface {
	SendPrepared(ctx context.Context, m producer.Prepared) (string, error)
	SendPreparedBatch(ctx context.Context, messages []producer.Prepared) ([]producer.Result, error)
}

var _ Sender = (*producer.Producer)(nil)

// Defaults of [Config].
const (
	// DefaultRetention is Config.Retention when zero.
	DefaultRetention = 30 * 24 * time.Hour
	// defaultStoreTimeout bounds the writes after a handler returned, whose context may
	// have ended.
	defaultStoreTimeout = 10 * time.Second
)

// Config configures [New].
type Config struct {
	// Table is the shared table (package table). Required.
	Table string
	// Shards is the number of counter items of each batch opened, 1 to [MaxShards]; if
	// zero, 1. A job's end writes the shard its job id hashes to, so a batch takes about
	// Shards times the write rate one item takes: see the package doc for the arithmetic
	// (2,000 jobs/s needs at least 4, 8 with headroom).
	Shards int
	// Retention is how long a batch can be used after [Batches.Open]: its items' expiry
	// (the table's TTL attribute). A job that ends after it, or an Add, is refused, and
	// [Batches.Get] reports the batch as not found, whether or not TTL has deleted the
	// items. It is also the unique window of the callbacks. If zero, DefaultRetention
	// (30 days).
	Retention time.Duration
	// Logger receives refused counts (Error) and failed writes (Warn); if nil,
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock; if nil, time.Now.
	Now func() time.Time
}

// Batches opens batches and counts their jobs. It is safe for concurrent use.
type Batches struct {
	api    API
	sender Sender
	config Config
}

// New returns batches kept in config.Table through api, sending jobs and callbacks with
// sender. It returns an error naming every invalid argument.
func New(api API, sender Sender, config Config) (*Batches, error) {
	var errs []error
	if api == nil {
		errs = append(errs, errors.New("batches: nil DynamoDB client"))
	}
	if sender == nil {
		errs = append(errs, errors.New("batches: nil producer"))
	}
	if config.Table == "" {
		errs = append(errs, errors.New("batches: Config.Table is empty"))
	}
	if config.Shards < 0 || config.Shards > MaxShards {
		errs = append(errs, fmt.Errorf("batches: Config.Shards %d is outside 1 to %d", config.Shards, MaxShards))
	}
	if config.Retention < 0 || (config.Retention > 0 && config.Retention < time.Minute) {
		errs = append(errs, fmt.Errorf("batches: Config.Retention %s is below 1m", config.Retention))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if config.Shards == 0 {
		config.Shards = 1
	}
	if config.Retention == 0 {
		config.Retention = DefaultRetention
	}
	if config.Logger == nil {
		config.Logger = slog.Default()
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	return &Batches{api: api, sender: sender, config: config}, nil
}
