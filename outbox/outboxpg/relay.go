package outboxpg

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/producer"

	"github.com/sqsworker/sqsworker/outbox"
)

// RelayConfig adds PostgreSQL's settings to [outbox.RelayConfig].
type RelayConfig struct {
	outbox.RelayConfig
	// KeepPublished marks published rows (published_at) instead of deleting them; the
	// caller then prunes them. Deleting keeps the table and its indexes small.
	KeepPublished bool
}

// NewRelay returns a relay for the sqsworker_outbox table of pool's database
// (see [Migrate]). Each cycle is one transaction:
//
//  1. claim up to BatchSize due rows with FOR UPDATE SKIP LOCKED, by next attempt time:
//     rows never tried or past their backoff, and of a FIFO message group only its
//     head (its earliest unpublished row, when due), and then, locked behind it, the
//     group's next rows;
//  2. send them with SendMessageBatch (through the producer);
//  3. delete (or mark) the rows SQS confirmed, record the failed attempts (attempts,
//     next_attempt_at, last_error), mark failed the rows that can never be sent or ran
//     out of attempts, commit.
//
// Relays run at once safely: SKIP LOCKED gives each a different set of rows, and a row
// of a group is claimed only when no earlier row of the group is unpublished (a claimed
// head is still unpublished for everyone else until its relay commits), so a group never
// has two relays and never goes out of order; [Outbox.Enqueue]'s group lock makes the
// seq order of a group its commit order. A relay that dies before its commit loses its
// locks with its connection: the rows are claimed again at once, and sent again if they
// were sent (the FIFO deduplication id and the consumer's idempotency absorb it).
//
// A failed row of a FIFO message group parks the group: its later rows wait (a FIFO
// queue would otherwise deliver them before it) until [Outbox.Retry] or
// [Outbox.Skip]; [Outbox.Parked] lists such groups. Other groups go on.
//
// The relay holds one pooled connection to LISTEN on the "sqsworker_outbox" channel
// (the schema's trigger NOTIFYs it when entries commit) and polls every PollInterval as
// the fallback (a lost notification, a broken listening connection).
func NewRelay(pool *pgxpool.Pool, o *Outbox, p *producer.Producer, config RelayConfig) (*outbox.Relay, error) {
	if pool == nil || o == nil {
		return nil, errNoPool
	}
	return outbox.NewRelay(NewStore(pool, o, config.KeepPublished), p, config.RelayConfig)
}

// NewStore returns the [outbox.Store] of the sqsworker_outbox table of pool's database,
// for [outbox.NewRelay]: the claims [NewRelay] describes; keepPublished is
// RelayConfig.KeepPublished. Most users call NewRelay.
func NewStore(pool *pgxpool.Pool, o *Outbox, keepPublished bool) outbox.Store {
	return &postgresStore{pool: pool, outbox: o, keep: keepPublished}
}

type postgresStore struct {
	pool   *pgxpool.Pool
	outbox *Outbox
	keep   bool
	listen *pgxpool.Conn // the LISTEN connection; nil until the first wait, or after it broke
}

func (s *postgresStore) Name() string { return "postgres" }

const pendingRow = `published_at IS NULL AND failed_at IS NULL`

// qualifiedEntryColumns returns entryColumns of the table aliased alias.
func qualifiedEntryColumns(alias string) string {
	fields := strings.Split(entryColumns, ",")
	for i, f := range fields {
		fields[i] = alias + "." + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// readyColumn tells whether a row may be sent now: past its next attempt time and at
// least MinAge ($2, seconds) old.
const readyColumn = `(o.next_attempt_at <= clock_timestamp() AND o.created_at <= clock_timestamp() - make_interval(secs => $2))`

// claimHeads takes due unordered rows and the due heads of FIFO groups (no earlier row
// of the group unpublished, failed rows included).
var claimHeads = `SELECT ` + qualifiedEntryColumns("o") + `, o.ordered, true FROM sqsworker_outbox o
	WHERE o.published_at IS NULL AND o.failed_at IS NULL AND ` + readyColumn + `
	  AND (NOT o.ordered OR NOT EXISTS (
	      SELECT 1 FROM sqsworker_outbox e
	      WHERE e.ordered AND e.queue_url = o.queue_url AND e.group_id = o.group_id AND e.seq < o.seq
	        AND e.published_at IS NULL))
	ORDER BY o.next_attempt_at, o.seq
	LIMIT $1
	FOR UPDATE OF o SKIP LOCKED`

// claimFollowers takes the rows after the claimed heads of their groups. It waits for
// (rather than skips) a row another relay holds: it was a head for that relay, which
// commits shortly, and the row is then rechecked; skipping could take a later row. A
// group's rows are kept up to the first that is not ready (see readyColumn).
var claimFollowers = `SELECT ` + qualifiedEntryColumns("o") + `, true, ` + readyColumn + ` FROM sqsworker_outbox o
	JOIN unnest($3::text[], $4::text[], $5::bigint[]) AS h(queue_url, group_id, seq)
	  ON o.queue_url = h.queue_url AND o.group_id = h.group_id AND o.seq > h.seq
	WHERE o.ordered AND o.published_at IS NULL AND o.failed_at IS NULL
	ORDER BY o.seq
	LIMIT $1
	FOR UPDATE OF o`

// claimedRow is a row of claimHeads or claimFollowers.
type claimedRow struct {
	postgresRow
	ordered, ready bool
}

func scanClaimed(row pgx.CollectableRow) (claimedRow, error) {
	var r claimedRow
	var err error
	r.postgresRow, err = scanEntry(withTail(row, &r.ordered, &r.ready))
	return r, err
}

func (s *postgresStore) Claim(ctx context.Context, limit int, minAge time.Duration) (outbox.Claim, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: claiming entries: %w", err)
	}
	c, err := s.claimIn(ctx, tx, limit, minAge.Seconds())
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("outbox: claiming entries: %w", err)
	}
	return c, nil
}

func (s *postgresStore) claimIn(ctx context.Context, tx pgx.Tx, limit int, minAge float64) (*postgresClaim, error) {
	rows, err := tx.Query(ctx, claimHeads, limit, minAge)
	if err != nil {
		return nil, err
	}
	heads, err := pgx.CollectRows(rows, scanClaimed)
	if err != nil {
		return nil, err
	}
	// In seq order (they were taken by next attempt), so that a group's followers,
	// merged in below, come after its head.
	slices.SortFunc(heads, func(a, b claimedRow) int { return cmp.Compare(a.seq, b.seq) })
	var queues, groups []string
	var seqs []int64
	for _, r := range heads {
		if r.entry.Ordered() && r.damage == nil { // a damaged head parks its group
			queues, groups, seqs = append(queues, r.entry.QueueURL), append(groups, r.entry.GroupID), append(seqs, r.seq)
		}
	}
	all := heads
	if room := limit - len(heads); room > 0 && len(groups) > 0 {
		rows, err := tx.Query(ctx, claimFollowers, room, minAge, queues, groups, seqs)
		if err != nil {
			return nil, err
		}
		followers, err := pgx.CollectRows(rows, scanClaimed)
		if err != nil {
			return nil, err
		}
		all = mergeBySeq(heads, readyFollowers(followers))
	}
	c := &postgresClaim{store: s, tx: tx, seqs: make(map[string]int64, len(all)), list: make([]outbox.Claimed, len(all))}
	for i, r := range all {
		c.list[i] = outbox.Claimed{Entry: r.entry, Damage: r.damage}
		c.seqs[r.entry.ID] = r.seq
	}
	return c, nil
}

// readyFollowers keeps, per group, the followers (in seq order) before the first that
// is not ready or is damaged (that one is kept: it is failed, and parks the group).
func readyFollowers(followers []claimedRow) []claimedRow {
	stopped := map[string]bool{}
	kept := followers[:0]
	for _, r := range followers {
		group := r.entry.QueueURL + "\x00" + r.entry.GroupID
		switch {
		case stopped[group]:
		case !r.ready:
			stopped[group] = true
		default:
			kept = append(kept, r)
			stopped[group] = r.damage != nil
		}
	}
	return kept
}

// mergeBySeq merges two lists sorted by seq.
func mergeBySeq(a, b []claimedRow) []claimedRow {
	out := make([]claimedRow, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].seq < b[0].seq {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

func (s *postgresStore) Summary(ctx context.Context) (outbox.Summary, error) {
	return s.outbox.Summary(ctx, s.pool)
}

// wait waits for a notification on the outbox channel, at most d.
func (s *postgresStore) Wait(ctx context.Context, d time.Duration) {
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

func (s *postgresStore) Close() { s.dropListener() }

type postgresClaim struct {
	store *postgresStore
	tx    pgx.Tx
	list  []outbox.Claimed
	seqs  map[string]int64
}

func (c *postgresClaim) Entries() []outbox.Claimed { return c.list }

func (c *postgresClaim) Settle(ctx context.Context, verdicts []outbox.Verdict) error {
	defer func() { _ = c.tx.Rollback(ctx) }()
	var published []int64
	batch := &pgx.Batch{}
	failed := 0
	for _, v := range verdicts {
		seq := c.seqs[v.ID]
		switch v.Kind {
		case outbox.VerdictPublished:
			published = append(published, seq)
		case outbox.VerdictRetry:
			batch.Queue(`UPDATE sqsworker_outbox SET attempts = $2, next_attempt_at = clock_timestamp() + make_interval(secs => $3),
				last_error = $4 WHERE seq = $1`, seq, v.Attempts, v.Delay.Seconds(), outbox.ErrorText(v.Err))
		case outbox.VerdictFailed:
			failed++
			reason := outbox.ErrorText(v.Err)
			batch.Queue(`UPDATE sqsworker_outbox SET failed_at = clock_timestamp(), failure_reason = $2, attempts = $3,
				last_error = $2 WHERE seq = $1`, seq, reason, v.Attempts)
		}
	}
	if len(published) > 0 {
		query := `DELETE FROM sqsworker_outbox WHERE seq = ANY($1)`
		if c.store.keep {
			query = `UPDATE sqsworker_outbox SET published_at = clock_timestamp() WHERE seq = ANY($1)`
		}
		batch.Queue(query, published)
	}
	if batch.Len() > 0 {
		if err := c.tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("outbox: recording %d published and %d failed entries: %w", len(published), failed, err)
		}
	}
	if err := c.tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox: committing %d published and %d failed entries: %w", len(published), failed, err)
	}
	return nil
}

func (c *postgresClaim) Release(ctx context.Context) { _ = c.tx.Rollback(ctx) }
