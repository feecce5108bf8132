package outboxpg

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

func TestStorePassesTheSuite(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outboxtest.Harness { return newPostgresSuite(t) })
}

// postgresSuite is the PostgreSQL store as the conformance suite drives it: a schema of
// its own per test, entries committed with an order row. Each store has a pool of its
// own, named by its application_name, so that Crash can end its connections.
type postgresSuite struct {
	pool   *pgxpool.Pool
	url    string
	outbox *Outbox
	names  map[outbox.Store]string // store → application_name of its pool
}

func newPostgresSuite(t testing.TB) *postgresSuite {
	pool, url := newSchemaPool(t, 8)
	return &postgresSuite{pool: pool, url: url, outbox: New(Config{}), names: map[outbox.Store]string{}}
}

// newSchemaPool creates a schema of its own for the test, migrates the outbox into it
// and returns a pool whose search_path is that schema; the schema is dropped at the end.
func newSchemaPool(t testing.TB, maxConns int) (*pgxpool.Pool, string) {
	t.Helper()
	base := testenv.PostgresURL(t)
	schema := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t), "-", "_"))
	admin, err := pgx.Connect(context.Background(), base)
	require.NoError(t, err)
	_, err = admin.Exec(context.Background(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		_ = admin.Close(context.Background())
	})
	separator := "?"
	if strings.Contains(base, "?") {
		separator = "&"
	}
	url := fmt.Sprintf("%s%ssearch_path=%s&pool_max_conns=%d", base, separator, schema, maxConns)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, Migrate(context.Background(), pool))
	_, err = pool.Exec(context.Background(), "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)")
	require.NoError(t, err)
	return pool, url
}

// relay returns a relay over h's table.
func (h *postgresSuite) relay(t *testing.T, p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	r, err := NewRelay(h.pool, h.outbox, p, RelayConfig{RelayConfig: config})
	require.NoError(t, err)
	return r
}

func (h *postgresSuite) write(t *testing.T, queueURL string, jobs []producer.Job, commit bool) []outbox.Entry {
	t.Helper()
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "INSERT INTO orders (note) VALUES ('an order')")
	require.NoError(t, err)
	entries, err := h.outbox.Enqueue(ctx, tx, queueURL, jobs...)
	require.NoError(t, err)
	if !commit {
		require.NoError(t, tx.Rollback(ctx))
		return nil
	}
	require.NoError(t, tx.Commit(ctx))
	return entries
}

func (h *postgresSuite) Commit(t *testing.T, queueURL string, jobs ...producer.Job) []outbox.Entry {
	return h.write(t, queueURL, jobs, true)
}

func (h *postgresSuite) Rollback(t *testing.T, queueURL string, jobs ...producer.Job) {
	h.write(t, queueURL, jobs, false)
}

// Store ignores lease: a claim is a transaction, which ends with its connection.
func (h *postgresSuite) Store(t *testing.T, _ time.Duration) outbox.Store {
	name := "outboxtest-" + rand.Text() // unique in the server: Crash ends its connections only
	pool, err := pgxpool.New(context.Background(), h.url+"&application_name="+name)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := NewStore(pool, h.outbox, false)
	h.names[s] = name
	return s
}

// Crash has the server end the store's connections (and so its transactions and their
// row locks), as it does when a relay's process dies.
func (h *postgresSuite) Crash(t *testing.T, s outbox.Store) {
	_, err := h.pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, h.names[s])
	require.NoError(t, err)
}

func (h *postgresSuite) Pending(t *testing.T) []string {
	rows, err := h.pool.Query(context.Background(), "SELECT id FROM sqsworker_outbox WHERE published_at IS NULL AND failed_at IS NULL ORDER BY seq")
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}

func (h *postgresSuite) Operator() outbox.Operator { return h.outbox.Operator(h.pool) }

// PlantDamaged writes a pending row whose stored job is cut short, its seq before the
// committed ones (they are written later).
func (h *postgresSuite) PlantDamaged(t *testing.T, queueURL string) string {
	e, err := outbox.NewEntry(queueURL, outboxtest.Job(0), time.Unix(1, 0))
	require.NoError(t, err)
	_, err = h.pool.Exec(context.Background(), `INSERT INTO sqsworker_outbox (id, queue_url, job) VALUES ($1, $2, '{"v":1,"queue":')`, e.ID, queueURL)
	require.NoError(t, err)
	return e.ID
}

// BenchmarkRelay measures the PostgreSQL relay (see outboxtest.BenchmarkRelay), to a
// standard queue and to a FIFO one:
//
//	make bench-outbox   (eval "$(localstack/env)" && go test -run '^$' -bench BenchmarkRelay -benchtime 2000x ./outbox/outboxpg)
func BenchmarkRelay(b *testing.B) {
	for _, name := range []string{"postgres", "postgres-fifo"} {
		b.Run(name, func(b *testing.B) {
			h := newPostgresSuite(b)
			write := func(queueURL string, jobs []producer.Job) {
				ctx := context.Background()
				tx, err := h.pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.outbox.Enqueue(ctx, tx, queueURL, jobs...); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			outboxtest.BenchmarkRelay(b, strings.HasSuffix(name, "-fifo"), write, func(p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
				r, err := NewRelay(h.pool, h.outbox, p, RelayConfig{RelayConfig: config})
				if err != nil {
					b.Fatal(err)
				}
				return r
			})
		})
	}
}

// BenchmarkCommitToHandler measures commit to handler start through the PostgreSQL
// outbox (see outboxtest.BenchmarkCommitToHandler):
//
//	eval "$(localstack/env)" && cd outbox/outboxpg && OUTBOX_BENCH_LATENCY=10ms go test -run '^$' -bench BenchmarkCommitToHandler -benchtime 4000x .
func BenchmarkCommitToHandler(b *testing.B) {
	h := newPostgresSuite(b)
	commit := func(queueURL string, job producer.Job) outbox.Entry {
		ctx := context.Background()
		tx, err := h.pool.Begin(ctx)
		if err != nil {
			b.Error(err)
			return outbox.Entry{}
		}
		defer func() { _ = tx.Rollback(ctx) }()
		entries, err := h.outbox.Enqueue(ctx, tx, queueURL, job)
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			b.Error(err)
			return outbox.Entry{}
		}
		return entries[0]
	}
	outboxtest.BenchmarkCommitToHandler(b, commit, func(p *producer.Producer, config outbox.RelayConfig) *outbox.Relay {
		r, err := NewRelay(h.pool, h.outbox, p, RelayConfig{RelayConfig: config})
		if err != nil {
			b.Fatal(err)
		}
		return r
	})
}
