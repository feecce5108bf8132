package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/producer"
)

// PostgresRelayConfig adds PostgreSQL's settings to [RelayConfig].
type PostgresRelayConfig struct {
	RelayConfig
	// KeepPublished marks published rows (published_at) instead of deleting them; the
	// caller then prunes them. Deleting keeps the table and its indexes small.
	KeepPublished bool
}

// NewPostgresRelay returns a relay for the sqsworker_outbox table of pool's database
// (see [MigratePostgres]). Each cycle is one transaction:
//
//  1. claim up to BatchSize unpublished rows with FOR UPDATE SKIP LOCKED, in seq
//     order; for a FIFO message group only its head (the earliest unpublished row), and
//     then, locked behind it, the group's next rows;
//  2. send them with SendMessageBatch (through the producer);
//  3. delete (or mark) the rows SQS confirmed, mark the refused ones failed, commit.
//
// Relays run at once safely: SKIP LOCKED gives each a different set of rows, and a row
// of a group is claimed only when no earlier row of the group is unpublished (a claimed
// head is still unpublished for everyone else until its relay commits), so a group never
// has two relays and never goes out of order. A relay that dies before its commit loses
// its locks with its connection: the rows are claimed again, and sent again if they
// were sent (the FIFO deduplication id and the consumer's idempotency absorb it).
//
// A refused row (marked failed) no longer holds its group back: like a FIFO message moved
// to a dead-letter queue, it is set aside and the group's next row goes out; it stays
// listed by [Postgres.Failed].
//
// The relay holds one pooled connection to LISTEN on the "sqsworker_outbox" channel
// (the schema's trigger NOTIFYs it when entries commit) and polls every PollInterval as
// the fallback (a lost notification, a broken listening connection).
func NewPostgresRelay(pool *pgxpool.Pool, o *Postgres, p *producer.Producer, config PostgresRelayConfig) (*Relay, error) {
	if pool == nil || o == nil {
		return nil, errNoPool
	}
	return newRelay(&postgresStore{pool: pool, outbox: o, keep: config.KeepPublished}, p, config.RelayConfig)
}

type postgresStore struct {
	pool   *pgxpool.Pool
	outbox *Postgres
	keep   bool
	listen *pgxpool.Conn // the LISTEN connection; nil until the first wait, or after it broke
}

func (s *postgresStore) name() string { return "postgres" }

const pendingRow = `published_at IS NULL AND failed_at IS NULL`

// claimHeads takes unordered rows and the heads of FIFO groups.
const claimHeads = `SELECT ` + entryColumns + `, ordered FROM sqsworker_outbox o
	WHERE ` + pendingRow + `
	  AND (NOT o.ordered OR NOT EXISTS (
	      SELECT 1 FROM sqsworker_outbox e
	      WHERE e.ordered AND e.queue_url = o.queue_url AND e.group_id = o.group_id AND e.seq < o.seq
	        AND e.published_at IS NULL AND e.failed_at IS NULL))
	ORDER BY seq
	LIMIT $1
	FOR UPDATE SKIP LOCKED`

// qualifiedEntryColumns are entryColumns of the table aliased o.
var qualifiedEntryColumns = "o." + strings.ReplaceAll(entryColumns, ", ", ", o.")

// claimFollowers takes the rows after the claimed heads of their groups. It waits for
// (rather than skips) a row another relay holds: it was a head for that relay, which
// commits shortly, and the row is then rechecked; skipping could take a later row.
var claimFollowers = `SELECT ` + qualifiedEntryColumns + `, true FROM sqsworker_outbox o
	JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS h(queue_url, group_id, seq)
	  ON o.queue_url = h.queue_url AND o.group_id = h.group_id AND o.seq > h.seq
	WHERE o.ordered AND o.published_at IS NULL AND o.failed_at IS NULL
	ORDER BY o.seq
	LIMIT $4
	FOR UPDATE OF o`

func scanClaimed(row pgx.CollectableRow) (postgresRow, error) {
	var r postgresRow
	var group, reason *string
	var delay int32
	var attributes []byte
	var failedAt *time.Time
	var ordered bool
	err := row.Scan(&r.seq, &r.entry.ID, &r.entry.QueueURL, &r.entry.Type, &r.entry.Body, &group,
		&r.entry.IdempotencyKey, &delay, &attributes, &r.entry.CreatedAt, &failedAt, &reason, &ordered)
	if err != nil {
		return r, err
	}
	if group != nil {
		r.entry.GroupID = *group
	}
	r.entry.Delay = time.Duration(delay) * time.Second
	if len(attributes) > 0 {
		if err := json.Unmarshal(attributes, &r.entry.Attributes); err != nil {
			return r, fmt.Errorf("outbox: entry %s: attributes: %w", r.entry.ID, err)
		}
	}
	return r, nil
}

func (s *postgresStore) claim(ctx context.Context, limit int) (claim, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: claiming entries: %w", err)
	}
	c, err := s.claimIn(ctx, tx, limit)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("outbox: claiming entries: %w", err)
	}
	return c, nil
}

func (s *postgresStore) claimIn(ctx context.Context, tx pgx.Tx, limit int) (*postgresClaim, error) {
	rows, err := tx.Query(ctx, claimHeads, limit)
	if err != nil {
		return nil, err
	}
	heads, err := pgx.CollectRows(rows, scanClaimed)
	if err != nil {
		return nil, err
	}
	c := &postgresClaim{store: s, tx: tx}
	var queues, groups []string
	var seqs []int64
	for _, r := range heads {
		if r.entry.ordered() {
			queues, groups, seqs = append(queues, r.entry.QueueURL), append(groups, r.entry.GroupID), append(seqs, r.seq)
		}
	}
	all := heads
	if room := limit - len(heads); room > 0 && len(groups) > 0 {
		rows, err := tx.Query(ctx, claimFollowers, queues, groups, seqs, room)
		if err != nil {
			return nil, err
		}
		followers, err := pgx.CollectRows(rows, scanClaimed)
		if err != nil {
			return nil, err
		}
		all = mergeBySeq(heads, followers)
	}
	c.seqs = make(map[string]int64, len(all))
	c.list = make([]Entry, len(all))
	for i, r := range all {
		c.list[i] = r.entry
		c.seqs[r.entry.ID] = r.seq
	}
	return c, nil
}

// mergeBySeq merges two lists sorted by seq.
func mergeBySeq(a, b []postgresRow) []postgresRow {
	out := make([]postgresRow, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].seq < b[0].seq {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

func (s *postgresStore) backlog(ctx context.Context) (int, time.Duration, error) {
	return s.outbox.Backlog(ctx, s.pool)
}

// Backlog returns the number of unpublished entries and the age of the oldest (0 when
// none), both by the database (its clock; through the partial index).
func (o *Postgres) Backlog(ctx context.Context, db Querier) (int, time.Duration, error) {
	var count int
	var lag *time.Duration
	rows, err := db.Query(ctx, `SELECT count(*), clock_timestamp() - min(created_at)
		FROM sqsworker_outbox WHERE `+pendingRow)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&count, &lag}, func() error { return nil })
	}
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: counting unpublished entries: %w", err)
	}
	if lag == nil {
		return count, 0, nil
	}
	return count, *lag, nil
}

// wait waits for a notification on the outbox channel, at most d.
func (s *postgresStore) wait(ctx context.Context, d time.Duration) {
	waitCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if s.listen == nil {
		conn, err := s.pool.Acquire(waitCtx)
		if err != nil {
			<-waitCtx.Done()
			return
		}
		if _, err := conn.Exec(waitCtx, "LISTEN "+postgresChannel); err != nil {
			conn.Release()
			<-waitCtx.Done()
			return
		}
		s.listen = conn
	}
	_, err := s.listen.Conn().WaitForNotification(waitCtx)
	if err != nil && s.listen.Conn().IsClosed() { // broken: listen again on a new connection
		s.dropListener()
		<-waitCtx.Done()
	}
}

func (s *postgresStore) dropListener() {
	if s.listen != nil {
		_ = s.listen.Conn().Close(context.Background())
		s.listen.Release()
		s.listen = nil
	}
}

func (s *postgresStore) close() { s.dropListener() }

type postgresClaim struct {
	store *postgresStore
	tx    pgx.Tx
	list  []Entry
	seqs  map[string]int64
}

func (c *postgresClaim) entries() []Entry { return c.list }

func (c *postgresClaim) settle(ctx context.Context, published []string, refused map[string]error) error {
	defer func() { _ = c.tx.Rollback(ctx) }()
	if len(published) > 0 {
		seqs := make([]int64, len(published))
		for i, id := range published {
			seqs[i] = c.seqs[id]
		}
		query := `DELETE FROM sqsworker_outbox WHERE seq = ANY($1)`
		if c.store.keep {
			query = `UPDATE sqsworker_outbox SET published_at = clock_timestamp() WHERE seq = ANY($1)`
		}
		if _, err := c.tx.Exec(ctx, query, seqs); err != nil {
			return fmt.Errorf("outbox: removing %d published entries: %w", len(published), err)
		}
	}
	for id, reason := range refused {
		if _, err := c.tx.Exec(ctx, `UPDATE sqsworker_outbox SET failed_at = clock_timestamp(), failure_reason = $2 WHERE seq = $1`,
			c.seqs[id], truncate(reason.Error(), 4000)); err != nil {
			return fmt.Errorf("outbox: marking entry %s failed: %w", id, err)
		}
	}
	if err := c.tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox: committing %d published and %d failed entries: %w", len(published), len(refused), err)
	}
	return nil
}

func (c *postgresClaim) release(ctx context.Context) { _ = c.tx.Rollback(ctx) }
