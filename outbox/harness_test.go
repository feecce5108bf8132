package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// newOutboxTable creates a uniquely named outbox table (with its index and stream) and
// deletes it when the test ends.
func newOutboxTable(t testing.TB, client *dynamodb.Client, config DynamoDBConfig) *DynamoDB {
	t.Helper()
	config.Table = testenv.UniqueName(t)
	o, err := NewDynamoDB(config)
	require.NoError(t, err)
	_, err = client.CreateTable(context.Background(), o.CreateTableInput())
	var exists *dynamodbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &exists) {
		t.Fatalf("creating outbox table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(config.Table)})
	})
	return o
}

type dynamoHarness struct {
	client *dynamodb.Client
	outbox *DynamoDB
	orders string // the business table
}

func newDynamoHarness(t *testing.T) *dynamoHarness {
	client := testenv.DynamoDB(t)
	return &dynamoHarness{client: client, outbox: newOutboxTable(t, client, DynamoDBConfig{}), orders: testenv.NewTable(t, client)}
}

func (h *dynamoHarness) orderItem(t *testing.T) dynamodbtypes.TransactWriteItem {
	return dynamodbtypes.TransactWriteItem{Put: &dynamodbtypes.Put{
		TableName: aws.String(h.orders),
		Item:      map[string]dynamodbtypes.AttributeValue{"id": str(testenv.UniqueName(t))},
	}}
}

func (h *dynamoHarness) commit(t *testing.T, queueURL string, jobs ...producer.Job) []Entry {
	t.Helper()
	items, entries, err := h.outbox.TransactItems([]dynamodbtypes.TransactWriteItem{h.orderItem(t)}, queueURL, jobs...)
	require.NoError(t, err)
	_, err = h.client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	require.NoError(t, err)
	return entries
}

// rollback's transaction is cancelled by DynamoDB: its business item's condition fails.
func (h *dynamoHarness) rollback(t *testing.T, queueURL string, jobs ...producer.Job) {
	t.Helper()
	order := h.orderItem(t)
	order.Put.ConditionExpression = aws.String("attribute_exists(id)") // the order does not exist yet
	items, _, err := h.outbox.TransactItems([]dynamodbtypes.TransactWriteItem{order}, queueURL, jobs...)
	require.NoError(t, err)
	_, err = h.client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var cancelled *dynamodbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &cancelled)
}

func (h *dynamoHarness) relay(t *testing.T, p *producer.Producer, config RelayConfig) *Relay {
	t.Helper()
	r, err := NewDynamoDBRelay(h.client, h.outbox, p, config)
	require.NoError(t, err)
	return r
}

func (h *dynamoHarness) pending(t *testing.T) []string {
	t.Helper()
	entries, err := h.outbox.query(context.Background(), h.client, pendingPrefix+"0", 100000)
	require.NoError(t, err)
	return ids(entries)
}

func (h *dynamoHarness) failed(t *testing.T) []Entry {
	t.Helper()
	entries, err := h.outbox.Failed(context.Background(), h.client, 1000)
	require.NoError(t, err)
	return entries
}

// plantDamaged writes a pending entry whose stored job is not JSON, ahead of every
// other entry in the index.
func (h *dynamoHarness) plantDamaged(t *testing.T, queueURL string) string {
	t.Helper()
	id := newID(time.Unix(1, 0))
	_, err := h.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(h.outbox.Table()), Item: map[string]dynamodbtypes.AttributeValue{
		dynamoKey: str(id), dynamoState: str(pendingPrefix + "0"), dynamoSeq: str("000000000001000000000000" + id),
		dynamoQueue: str(queueURL), dynamoJob: str(`{"v":1,"queue":`), dynamoCreated: num(1000),
	}})
	require.NoError(t, err)
	return id
}

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

// dynamodbTransact builds a TransactWriteItems input.
type dynamodbTransact struct {
	items []dynamodbtypes.TransactWriteItem
}

func (d dynamodbTransact) input() *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{TransactItems: d.items}
}
