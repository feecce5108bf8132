package outboxpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqsworker/sqsworker/outbox"
)

// entryColumns are the columns scanEntry reads, in order.
const entryColumns = `seq, id, queue_url, group_id, job, created_at, failed_at, failure_reason, attempts, next_attempt_at, last_error`

// postgresRow is a scanned row: its seq and entry, and why it could not be decoded.
type postgresRow struct {
	seq    int64
	entry  outbox.Entry
	damage error
}

// scanEntry reads a row of entryColumns. A row whose attributes cannot be decoded is
// returned with its damage, not as an error, so one bad row never stops a listing or a
// relay.
func scanEntry(row pgx.CollectableRow) (postgresRow, error) {
	var r postgresRow
	var group, job, reason, lastError *string
	var failedAt *time.Time
	err := row.Scan(&r.seq, &r.entry.ID, &r.entry.QueueURL, &group, &job, &r.entry.CreatedAt,
		&failedAt, &reason, &r.entry.Attempts, &r.entry.NextAttemptAt, &lastError)
	if err != nil {
		return r, err
	}
	r.entry.GroupID = deref(group)
	r.entry.FailureReason = deref(reason)
	r.entry.LastError = deref(lastError)
	if failedAt != nil {
		r.entry.FailedAt = *failedAt
	}
	if r.entry.Attempts == 0 {
		r.entry.NextAttemptAt = time.Time{} // never tried: due since it was written
	}
	r.damage = r.entry.DecodeJob(deref(job), job != nil)
	return r, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// listEntries runs a query of entryColumns and returns the entries.
func listEntries(ctx context.Context, db Querier, what, query string, args ...any) ([]outbox.Entry, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("outbox: listing %s: %w", what, err)
	}
	found, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("outbox: listing %s: %w", what, err)
	}
	entries := make([]outbox.Entry, len(found))
	for i, r := range found {
		entries[i] = r.entry
	}
	return entries, nil
}

// Failed returns up to limit failed entries, oldest failure first, with their reasons:
// the entries SQS refused, those that cannot be decoded and those whose attempts ran out
// (the heads of parked groups included).
func (o *Outbox) Failed(ctx context.Context, db Querier, limit int) ([]outbox.Entry, error) {
	return listEntries(ctx, db, "failed entries", `SELECT `+entryColumns+` FROM sqsworker_outbox
		WHERE failed_at IS NOT NULL ORDER BY failed_at, seq LIMIT $1`, limit)
}

// Parked returns up to limit parked FIFO message groups, the oldest failure first: for
// each, the failed entry that holds it back (its earliest failed one) and the number of
// unpublished entries behind it.
func (o *Outbox) Parked(ctx context.Context, db Querier, limit int) ([]outbox.ParkedGroup, error) {
	rows, err := db.Query(ctx, `SELECT `+qualifiedEntryColumns("f")+`,
		(SELECT count(*) FROM sqsworker_outbox w WHERE w.ordered AND w.published_at IS NULL AND w.failed_at IS NULL
		   AND w.queue_url = f.queue_url AND w.group_id = f.group_id AND w.seq > f.seq)
		FROM sqsworker_outbox f
		WHERE f.failed_at IS NOT NULL AND f.ordered AND f.published_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM sqsworker_outbox e WHERE e.ordered AND e.failed_at IS NOT NULL
		      AND e.published_at IS NULL AND e.queue_url = f.queue_url AND e.group_id = f.group_id AND e.seq < f.seq)
		ORDER BY f.failed_at, f.seq LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: listing parked groups: %w", err)
	}
	groups, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (outbox.ParkedGroup, error) {
		var waiting int
		r, err := scanEntry(withTail(row, &waiting))
		return outbox.ParkedGroup{QueueURL: r.entry.QueueURL, GroupID: r.entry.GroupID, Entry: r.entry, Waiting: waiting}, err
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: listing parked groups: %w", err)
	}
	return groups, nil
}

// tailRow scans entryColumns and then the extra columns of a row.
type tailRow struct {
	pgx.CollectableRow
	tail []any
}

func withTail(row pgx.CollectableRow, tail ...any) tailRow { return tailRow{row, tail} }

func (r tailRow) Scan(dest ...any) error { return r.CollectableRow.Scan(append(dest, r.tail...)...) }

// outbox.Summary returns the outbox's counts, by the database's clock, each through a partial
// index.
func (o *Outbox) Summary(ctx context.Context, db Querier) (outbox.Summary, error) {
	var s outbox.Summary
	var oldest *time.Duration
	rows, err := db.Query(ctx, `SELECT
		(SELECT count(*) FROM sqsworker_outbox WHERE `+pendingRow+`),
		(SELECT clock_timestamp() - min(created_at) FROM sqsworker_outbox WHERE `+pendingRow+`),
		(SELECT count(*) FROM sqsworker_outbox WHERE failed_at IS NOT NULL),
		(SELECT count(*) FROM (SELECT DISTINCT queue_url, group_id FROM sqsworker_outbox
		   WHERE failed_at IS NOT NULL AND ordered AND published_at IS NULL) p)`)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&s.Unpublished, &oldest, &s.Failed, &s.ParkedGroups}, func() error { return nil })
	}
	if err != nil {
		return outbox.Summary{}, fmt.Errorf("outbox: counting entries: %w", err)
	}
	if oldest != nil {
		s.OldestUnpublished = max(*oldest, 0)
	}
	return s, nil
}

// Backlog returns the number of unpublished entries and the age of the oldest (0 when
// none), both by the database (its clock; through the partial index). [Outbox.Summary]
// adds the failed entries and parked groups.
func (o *Outbox) Backlog(ctx context.Context, db Querier) (int, time.Duration, error) {
	s, err := o.Summary(ctx, db)
	return s.Unpublished, s.OldestUnpublished, err
}

// Retry makes the failed entry id unpublished again, due at once, with no attempts
// counted (LastError keeps its last error): a parked group goes on from it. It returns an
// error wrapping [outbox.ErrNotFailed] when no failed entry has that id.
func (o *Outbox) Retry(ctx context.Context, db Execer, id string) error {
	tag, err := db.Exec(ctx, `UPDATE sqsworker_outbox SET failed_at = NULL, failure_reason = NULL, attempts = 0,
		next_attempt_at = clock_timestamp() WHERE id = $1 AND failed_at IS NOT NULL AND published_at IS NULL`, id)
	if err != nil {
		return fmt.Errorf("outbox: retrying entry %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	return nil
}

// Skip deletes the failed entry id: it is never sent, and a group it parked goes on
// with its next entry. It returns an error wrapping [outbox.ErrNotFailed] when no failed entry
// has that id.
func (o *Outbox) Skip(ctx context.Context, db Execer, id string) error {
	tag, err := db.Exec(ctx, `DELETE FROM sqsworker_outbox WHERE id = $1 AND failed_at IS NOT NULL AND published_at IS NULL`, id)
	if err != nil {
		return fmt.Errorf("outbox: skipping entry %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	return nil
}

// DB runs queries and statements: *pgxpool.Pool and *pgx.Conn satisfy it (a pool for an
// [outbox.Operator] used concurrently).
type DB interface {
	Querier
	Execer
}

// Operator returns the [outbox.Operator] of o over db: o's Summary, Failed, Parked,
// Retry and Skip bound to db (for the CLI, the operations page, or a program's own
// tooling). It is safe for concurrent use when db is (a pool).
func (o *Outbox) Operator(db DB) outbox.Operator { return operator{o, db} }

type operator struct {
	outbox *Outbox
	db     DB
}

func (op operator) Summary(ctx context.Context) (outbox.Summary, error) {
	return op.outbox.Summary(ctx, op.db)
}

func (op operator) Failed(ctx context.Context, limit int) ([]outbox.Entry, error) {
	return op.outbox.Failed(ctx, op.db, limit)
}

func (op operator) Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error) {
	return op.outbox.Parked(ctx, op.db, limit)
}

func (op operator) Retry(ctx context.Context, id string) error {
	return op.outbox.Retry(ctx, op.db, id)
}

func (op operator) Skip(ctx context.Context, id string) error { return op.outbox.Skip(ctx, op.db, id) }
