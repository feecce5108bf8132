package outbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

type postgresHarness struct {
	pool   *pgxpool.Pool
	outbox *Postgres
	url    string
}

// postgresURL returns the test server's URL (localstack/postgres-up, SQSWORKER_POSTGRES_URL).
func postgresURL(t testing.TB) string {
	t.Helper()
	return testenv.PostgresURL(t)
}

// newSchemaPool creates a schema of its own for the test, migrates the outbox into it
// and returns a pool whose search_path is that schema; the schema is dropped at the end.
func newSchemaPool(t testing.TB, maxConns int) (*pgxpool.Pool, string) {
	t.Helper()
	base := postgresURL(t)
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
	require.NoError(t, MigratePostgres(context.Background(), pool))
	_, err = pool.Exec(context.Background(), "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)")
	require.NoError(t, err)
	return pool, url
}

func newPostgresHarness(t *testing.T) *postgresHarness {
	pool, url := newSchemaPool(t, 8)
	return &postgresHarness{pool: pool, outbox: NewPostgres(PostgresConfig{}), url: url}
}

func (h *postgresHarness) write(t *testing.T, queueURL string, jobs []producer.Job, commit bool) []Entry {
	t.Helper()
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "INSERT INTO orders (note) VALUES ('an order')")
	require.NoError(t, err)
	entries, err := h.outbox.Enqueue(ctx, tx, queueURL, jobs...)
	require.NoError(t, err)
	if commit {
		require.NoError(t, tx.Commit(ctx))
	} else {
		require.NoError(t, tx.Rollback(ctx))
	}
	return entries
}

func (h *postgresHarness) commit(t *testing.T, queueURL string, jobs ...producer.Job) []Entry {
	t.Helper()
	return h.write(t, queueURL, jobs, true)
}

func (h *postgresHarness) rollback(t *testing.T, queueURL string, jobs ...producer.Job) {
	t.Helper()
	h.write(t, queueURL, jobs, false)
}

func (h *postgresHarness) relay(t *testing.T, p *producer.Producer, config RelayConfig) *Relay {
	t.Helper()
	r, err := NewPostgresRelay(h.pool, h.outbox, p, PostgresRelayConfig{RelayConfig: config})
	require.NoError(t, err)
	return r
}

func (h *postgresHarness) pending(t *testing.T) []string {
	t.Helper()
	rows, err := h.pool.Query(context.Background(), "SELECT id FROM sqsworker_outbox WHERE "+pendingRow+" ORDER BY seq")
	require.NoError(t, err)
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return list
}

func (h *postgresHarness) failed(t *testing.T) []Entry {
	t.Helper()
	entries, err := h.outbox.Failed(context.Background(), h.pool, 1000)
	require.NoError(t, err)
	return entries
}

// plantDamaged writes a pending row whose stored job is not a prepared job.
func (h *postgresHarness) plantDamaged(t *testing.T, queueURL string) string {
	t.Helper()
	id := newID(time.Unix(1, 0))
	_, err := h.pool.Exec(context.Background(), `INSERT INTO sqsworker_outbox (id, queue_url, job)
		VALUES ($1, $2, '{"v":1,"queue":')`, id, queueURL)
	require.NoError(t, err)
	return id
}
