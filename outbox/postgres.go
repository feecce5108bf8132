package outbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqsworker/sqsworker/producer"
)

// PostgresSchema is the outbox's schema: the sqsworker_outbox table, its partial index
// of unpublished rows (WHERE published_at IS NULL), and the trigger that NOTIFYs the
// relays on the "sqsworker_outbox" channel. [MigratePostgres] applies it.
//
//go:embed postgres_schema.sql
var PostgresSchema string

// postgresChannel is the LISTEN/NOTIFY channel of new entries.
const postgresChannel = "sqsworker_outbox"

// migrationLock is the pg_advisory_xact_lock key that serializes concurrent migrations.
const migrationLock = 0x73717377_6f627831 // "sqswobx1"

// Beginner starts a transaction: *pgx.Conn, *pgxpool.Pool and pgx.Tx (a savepoint)
// satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// MigratePostgres creates the outbox table, its indexes and its notify trigger where
// missing, in one transaction under an advisory lock, so processes starting at once do
// not race; it is safe to call at every start. The table is created in the first
// schema of the connection's search_path. It returns the database's error, wrapped.
// Use it from a deploy step or at start-up, or apply [PostgresSchema] with your own
// migration tool.
func MigratePostgres(ctx context.Context, db Beginner) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("outbox: migrating: taking the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, PostgresSchema); err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	return nil
}

// Postgres writes outbox entries inside the caller's pgx transactions and reads them
// back for the relay. The zero value is not usable; see [NewPostgres].
type Postgres struct {
	now func() time.Time
}

// PostgresConfig configures a [Postgres] outbox.
type PostgresConfig struct {
	// Now is the clock of entry ids; if nil, time.Now. (created_at is the database's.)
	Now func() time.Time
}

// NewPostgres returns the outbox of the sqsworker_outbox table (see [MigratePostgres]).
func NewPostgres(config PostgresConfig) *Postgres {
	if config.Now == nil {
		config.Now = time.Now
	}
	return &Postgres{now: config.Now}
}

// Enqueue writes jobs, bound for queueURL, into the outbox inside tx, and returns their
// entries (CreatedAt is the database's transaction time). They are published only if
// tx commits, after it commits; rows of one FIFO message group are published in the
// order of their seq (their insert order), a later one never while an earlier one is
// unpublished. Job errors are those of [DynamoDB.Put], each naming the job's index;
// database errors are returned wrapped (and leave tx to the caller, who rolls it back).
func (o *Postgres) Enqueue(ctx context.Context, tx pgx.Tx, queueURL string, jobs ...producer.Job) ([]Entry, error) {
	entries := make([]Entry, len(jobs))
	for i, job := range jobs {
		entry, err := newEntry(queueURL, job, o.now())
		if err != nil {
			return nil, fmt.Errorf("outbox: job %d: %w", i, err)
		}
		entries[i] = entry
	}
	batch := &pgx.Batch{}
	for i := range entries {
		e := &entries[i]
		var attributes []byte
		if len(e.Attributes) > 0 {
			attributes, _ = json.Marshal(e.Attributes) // strings only: cannot fail
		}
		var group *string
		if e.GroupID != "" {
			group = &e.GroupID
		}
		batch.Queue(`INSERT INTO sqsworker_outbox
			(id, queue_url, job_type, body, group_id, ordered, idempotency_key, delay_seconds, attributes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING created_at`,
			e.ID, e.QueueURL, e.Type, e.Body, group, e.ordered(), e.IdempotencyKey, int32(e.Delay/time.Second), attributes,
		).QueryRow(func(row pgx.Row) error { return row.Scan(&e.CreatedAt) })
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("outbox: writing %d entries: %w", len(entries), err)
	}
	return entries, nil
}

// Querier runs a query: *pgx.Conn, *pgxpool.Pool and pgx.Tx satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// entryColumns are the columns scanEntry reads, in order.
const entryColumns = `seq, id, queue_url, job_type, body, group_id, idempotency_key, delay_seconds, attributes, created_at, failed_at, failure_reason`

// scanEntry reads a row of entryColumns.
func scanEntry(row pgx.CollectableRow) (postgresRow, error) {
	var r postgresRow
	var group, reason *string
	var delay int32
	var attributes []byte
	var failedAt *time.Time
	err := row.Scan(&r.seq, &r.entry.ID, &r.entry.QueueURL, &r.entry.Type, &r.entry.Body, &group,
		&r.entry.IdempotencyKey, &delay, &attributes, &r.entry.CreatedAt, &failedAt, &reason)
	if err != nil {
		return r, err
	}
	if group != nil {
		r.entry.GroupID = *group
	}
	if reason != nil {
		r.entry.FailureReason = *reason
	}
	if failedAt != nil {
		r.entry.FailedAt = *failedAt
	}
	r.entry.Delay = time.Duration(delay) * time.Second
	if len(attributes) > 0 {
		if err := json.Unmarshal(attributes, &r.entry.Attributes); err != nil {
			return r, fmt.Errorf("outbox: entry %s: attributes: %w", r.entry.ID, err)
		}
	}
	return r, nil
}

type postgresRow struct {
	seq   int64
	entry Entry
}

// Failed returns up to limit failed entries, oldest failure first, with their reasons:
// the entries SQS refused.
func (o *Postgres) Failed(ctx context.Context, db Querier, limit int) ([]Entry, error) {
	rows, err := db.Query(ctx, `SELECT `+entryColumns+` FROM sqsworker_outbox
		WHERE failed_at IS NOT NULL ORDER BY failed_at, seq LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: listing failed entries: %w", err)
	}
	found, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("outbox: listing failed entries: %w", err)
	}
	entries := make([]Entry, len(found))
	for i, r := range found {
		entries[i] = r.entry
	}
	return entries, nil
}

var errNoPool = errors.New("outbox: NewPostgresRelay needs a connection pool and an outbox")
