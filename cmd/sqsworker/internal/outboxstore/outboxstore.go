// Package outboxstore gives the CLI's outbox commands and the operations page one view
// of a transactional outbox (package outbox), whichever its store: DynamoDB or
// PostgreSQL. A [Store] is an [opspage.Outbox], the interface the page declares, so the
// page depends on no concrete store. It only binds an outbox to its client; the work is done by the outbox
// package's Summary, Failed, Parked, Retry and Skip.
package outboxstore

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/outbox"
)

// Store is one outbox with its client: the operations page's [opspage.Outbox] (see it
// for each method), and Close. Its methods are safe for concurrent use (the page serves
// requests in parallel).
type Store interface {
	opspage.Outbox
	// Close releases the client's connections (PostgreSQL); the Store is unusable after.
	Close()
}

// NewDynamoDB returns the outbox in table, read and written with api. Errors: a table
// name outbox.NewDynamoDB refuses.
func NewDynamoDB(api outbox.DynamoDBAPI, table string) (Store, error) {
	box, err := outbox.NewDynamoDB(outbox.DynamoDBConfig{Table: table})
	if err != nil {
		return nil, err
	}
	return &dynamoStore{box: box, api: api}, nil
}

type dynamoStore struct {
	box *outbox.DynamoDB
	api outbox.DynamoDBAPI
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
	return &postgresStore{box: outbox.NewPostgres(outbox.PostgresConfig{}), pool: pool, name: name}, nil
}

type postgresStore struct {
	box  *outbox.Postgres
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
