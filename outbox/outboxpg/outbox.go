package outboxpg

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqsworker/sqsworker/producer"

	"github.com/sqsworker/sqsworker/outbox"
)

// Schema is the outbox's schema: the sqsworker_outbox table, its partial indexes
// of unpublished rows, and the trigger that NOTIFYs the relays on the "sqsworker_outbox"
// channel. [Migrate] applies it. Its last statement sets the table's comment to
// [SchemaVersion].
//
//go:embed schema.sql
var Schema string

// SchemaVersion is the comment [Schema] sets on the table; a table that
// has it is not migrated again.
const SchemaVersion = "sqsworker outbox schema 3"

// postgresChannel is the LISTEN/NOTIFY channel of new entries.
const postgresChannel = "sqsworker_outbox"

// migrationLock is the pg_advisory_xact_lock key that serializes concurrent migrations.
const migrationLock = 0x73717377_6f627831 // "sqswobx1"

// groupLockSpace is the first key of the two-key pg_advisory_xact_lock a writer takes
// per FIFO message group (the second is hashtext of its queue URL and group id). Two-key
// advisory locks are a lock space of their own, apart from the one-key locks
// applications take.
const groupLockSpace = 0x7371776f // "sqwo"

// Beginner starts a transaction: *pgx.Conn, *pgxpool.Pool and pgx.Tx (a savepoint)
// satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate creates the outbox table, its indexes and its notify trigger where
// missing, and adds the columns of later versions to an older table (one of schema 2 or
// earlier only when it holds no unpublished entry: pre-1.0, the stored job form
// changed), in one transaction
// under an advisory lock, so processes starting at once do not race. A table already at
// [SchemaVersion] is left alone (no DDL, so no lock on the table): it is safe to
// call at every start. The table is created in the first schema of the connection's
// search_path. It returns the database's error, wrapped. Use it from a deploy step or at
// start-up, or apply [Schema] with your own migration tool.
func Migrate(ctx context.Context, db Beginner) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("outbox: migrating: taking the migration lock: %w", err)
	}
	var exists bool
	var version *string
	if err := tx.QueryRow(ctx, `SELECT to_regclass('sqsworker_outbox') IS NOT NULL, obj_description(to_regclass('sqsworker_outbox'), 'pg_class')`).Scan(&exists, &version); err != nil {
		return fmt.Errorf("outbox: migrating: reading the schema version: %w", err)
	}
	if version != nil && *version == SchemaVersion {
		return nil
	}
	if exists {
		if err := drainedBeforeSchema3(ctx, tx, deref(version)); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox: migrating: %w", err)
	}
	return nil
}

// drainedBeforeSchema3 refuses to migrate a table of an earlier schema that holds
// unpublished entries: those stored the job's parts in columns of their own, which the
// relay no longer reads (pre-1.0). Drain the outbox with the earlier release first.
func drainedBeforeSchema3(ctx context.Context, tx pgx.Tx, version string) error {
	var pending int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM sqsworker_outbox WHERE published_at IS NULL`).Scan(&pending); err != nil {
		return fmt.Errorf("outbox: migrating: counting the unpublished entries: %w", err)
	}
	if pending > 0 {
		return fmt.Errorf("outbox: migrating from %q: %d entries are not published yet (failed ones included), and %q stores the job in one column the earlier schema lacks: drain or skip them with the earlier release first", version, pending, SchemaVersion)
	}
	return nil
}

// Outbox writes outbox entries inside the caller's pgx transactions and reads them
// back for the relay and the operator. The zero value is not usable; see [New].
type Outbox struct {
	now func() time.Time
}

// Config configures a [Outbox] outbox.
type Config struct {
	// Now is the clock of entry ids; if nil, time.Now. (created_at is the database's.)
	Now func() time.Time
}

// New returns the outbox of the sqsworker_outbox table (see [Migrate]).
func New(config Config) *Outbox {
	if config.Now == nil {
		config.Now = time.Now
	}
	return &Outbox{now: config.Now}
}

// Enqueue writes jobs, bound for queueURL, into the outbox inside tx, and returns their
// entries (CreatedAt is the database's transaction time). They are published only if
// tx commits, after it commits.
//
// The entries of one FIFO message group are published in the order their transactions
// committed (within one transaction, in the order written): before it writes into a
// group, Enqueue takes a transaction-level advisory lock on the group (its queue URL
// and group id), so a transaction writing into a group waits until every other open
// transaction that wrote into it has committed or rolled back, and its rows then come
// after theirs. Keep such transactions short; transactions that write into several
// groups should do so in one Enqueue call (it locks them in a fixed order) or in the
// same order everywhere, or PostgreSQL may end one with a deadlock error (40P01), which
// the caller retries. Writers of different groups never wait for each other (unless
// their groups' 32-bit lock keys collide, which only makes them wait).
//
// Job errors are those of [outbox.NewEntry], each naming the job's index; database errors
// are returned wrapped (and leave tx to the caller, who rolls it back).
func (o *Outbox) Enqueue(ctx context.Context, tx pgx.Tx, queueURL string, jobs ...producer.Job) ([]outbox.Entry, error) {
	entries := make([]outbox.Entry, len(jobs))
	for i, job := range jobs {
		entry, err := outbox.NewEntry(queueURL, job, o.now())
		if err != nil {
			return nil, fmt.Errorf("outbox: job %d: %w", i, err)
		}
		entries[i] = entry
	}
	batch := &pgx.Batch{}
	for _, g := range orderedGroups(entries) {
		batch.Queue(`SELECT pg_advisory_xact_lock($1, hashtext(length($2)::text || ':' || $2 || $3))`, int32(groupLockSpace), g.queue, g.group)
	}
	for i := range entries {
		e := &entries[i]
		job, err := e.EncodeJob()
		if err != nil {
			return nil, fmt.Errorf("outbox: job %d: %w", i, err)
		}
		var group *string
		if e.GroupID != "" {
			group = &e.GroupID
		}
		batch.Queue(`INSERT INTO sqsworker_outbox (id, queue_url, group_id, ordered, job)
			VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
			e.ID, e.QueueURL, group, e.Ordered(), job,
		).QueryRow(func(row pgx.Row) error { return row.Scan(&e.CreatedAt) })
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("outbox: writing %d entries: %w", len(entries), err)
	}
	return entries, nil
}

// groupName names a FIFO message group.
type groupName struct{ queue, group string }

// orderedGroups returns the FIFO message groups of entries, sorted (a fixed lock order)
// and without repeats.
func orderedGroups(entries []outbox.Entry) []groupName {
	var groups []groupName
	for _, e := range entries {
		if e.Ordered() {
			groups = append(groups, groupName{e.QueueURL, e.GroupID})
		}
	}
	slices.SortFunc(groups, func(a, b groupName) int { return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.group, b.group)) })
	return slices.Compact(groups)
}

// Querier runs a query: *pgx.Conn, *pgxpool.Pool and pgx.Tx satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Execer runs a statement: *pgx.Conn, *pgxpool.Pool and pgx.Tx satisfy it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

var errNoPool = errors.New("outbox: NewRelay needs a connection pool and an outbox")
