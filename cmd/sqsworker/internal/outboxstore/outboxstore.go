// Package outboxstore gives the CLI's outbox commands and the operations page one view
// of a transactional outbox (package outbox), whichever its store: the store's
// outbox.Operator (DynamoDB or PostgreSQL, or any store that provides one) with a name
// for people and the client's lifetime: an [opspage.Outbox], the interface the page
// declares, with Close. It only opens the client; the work is done by
// the operator.
package outboxstore

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxpg"
)

// Store is one outbox with its client: the operations page's [opspage.Outbox] (the
// store's [outbox.Operator] and a name for people), and Close. Its methods are safe for
// concurrent use (the page serves requests in parallel).
type Store interface {
	opspage.Outbox
	// Close releases the client's connections (PostgreSQL); the Store is unusable after.
	Close()
}

// New returns the Store of op, named name (it must hold no secret); closing it calls
// closeFn when not nil. It is how a store other than DynamoDB and PostgreSQL backs the
// commands and the page.
func New(op outbox.Operator, name string, closeFn func()) Store {
	return &store{Operator: op, name: name, close: closeFn}
}

type store struct {
	outbox.Operator
	name  string
	close func()
}

func (s *store) Name() string { return s.name }

func (s *store) Close() {
	if s.close != nil {
		s.close()
	}
}

// NewDynamoDB returns the outbox in table, read and written with api. Errors: a table
// name outboxdynamo.New refuses.
func NewDynamoDB(api outboxdynamo.API, table string) (Store, error) {
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: table})
	if err != nil {
		return nil, err
	}
	return New(box.Operator(api), "DynamoDB table "+box.Table(), nil), nil
}

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
	return New(outboxpg.New(outboxpg.Config{}).Operator(pool), name, pool.Close), nil
}
