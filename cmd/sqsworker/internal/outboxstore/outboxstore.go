// Package outboxstore gives the CLI's outbox commands and the operations page one view
// of a transactional outbox (package outbox), whichever its store: DynamoDB or
// PostgreSQL. It only binds an outbox to its client; the work is done by the outbox
// package's Summary, Failed, Parked, Retry and Skip.
package outboxstore

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxpg"
)

// Store is one outbox with its client. Its methods are safe for concurrent use (the
// page serves requests in parallel).
type Store interface {
	// Name says which outbox this is, for people: "DynamoDB table T" or "PostgreSQL
	// host:port/database" (never the password of the connection URL).
	Name() string
	// Summary counts the unpublished entries, the age of the oldest, the failed entries
	// and the parked FIFO message groups.
	Summary(ctx context.Context) (outbox.Summary, error)
	// Failed lists up to limit failed entries with their reasons.
	Failed(ctx context.Context, limit int) ([]outbox.Entry, error)
	// Parked lists up to limit parked FIFO message groups with the entry that holds each.
	Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error)
	// Retry makes the failed entry id unpublished again, due at once; Skip deletes it.
	// Both return an error wrapping outbox.ErrNotFailed when no failed entry has that id.
	Retry(ctx context.Context, id string) error
	Skip(ctx context.Context, id string) error
	// Close releases the client's connections (PostgreSQL); the Store is unusable after.
	Close()
}

// NewDynamoDB returns the outbox in table, read and written with api. Errors: a table
// name outboxdynamo.New refuses.
func NewDynamoDB(api outboxdynamo.API, table string) (Store, error) {
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: table})
	if err != nil {
		return nil, err
	}
	return &dynamoStore{box: box, api: api}, nil
}

type dynamoStore struct {
	box *outboxdynamo.Outbox
	api outboxdynamo.API
}

func (s *dynamoStore) Name() string { return "DynamoDB table " + s.box.Table() }
func (s *dynamoStore) Summary(ctx context.Context) (outbox.Summary, error) {
	return s.box.Summary(ctx, s.api)
}
func (s *dynamoStore) Failed(ctx context.Context, limit int) ([]outbox.Entry, error) {
	return s.box.Failed(ctx, s.api, limit)
}
func (s *dynamoStore) Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error) {
	return s.box.Parked(ctx, s.api, limit)
}
func (s *dynamoStore) Retry(ctx context.Context, id string) error { return s.box.Retry(ctx, s.api, id) }
func (s *dynamoStore) Skip(ctx context.Context, id string) error  { return s.box.Skip(ctx, s.api, id) }
func (s *dynamoStore) Close()                                     {}

// OpenPostgres connects to the PostgreSQL outbox of url (a pgx connection URL; its
// search_path names the outbox table's schema) with a connection pool, and checks the
// connection. Errors: a malformed URL, a database that does not answer or refuses the
// login.
func OpenPostgres(ctx context.Context, url string) (Store, error) {
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("sqsworker: the PostgreSQL URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("sqsworker: connecting to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqsworker: connecting to PostgreSQL: %w", err)
	}
	conn := config.ConnConfig
	name := "PostgreSQL " + net.JoinHostPort(conn.Host, strconv.Itoa(int(conn.Port))) + "/" + conn.Database
	if path := conn.RuntimeParams["search_path"]; path != "" {
		name += " (search_path " + path + ")"
	}
	return &postgresStore{box: outboxpg.New(outboxpg.Config{}), pool: pool, name: name}, nil
}

type postgresStore struct {
	box  *outboxpg.Outbox
	pool *pgxpool.Pool
	name string
}

func (s *postgresStore) Name() string { return s.name }
func (s *postgresStore) Summary(ctx context.Context) (outbox.Summary, error) {
	return s.box.Summary(ctx, s.pool)
}
func (s *postgresStore) Failed(ctx context.Context, limit int) ([]outbox.Entry, error) {
	return s.box.Failed(ctx, s.pool, limit)
}
func (s *postgresStore) Parked(ctx context.Context, limit int) ([]outbox.ParkedGroup, error) {
	return s.box.Parked(ctx, s.pool, limit)
}
func (s *postgresStore) Retry(ctx context.Context, id string) error {
	return s.box.Retry(ctx, s.pool, id)
}
func (s *postgresStore) Skip(ctx context.Context, id string) error {
	return s.box.Skip(ctx, s.pool, id)
}
func (s *postgresStore) Close() { s.pool.Close() }
