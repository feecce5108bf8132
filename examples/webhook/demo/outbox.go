package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxpg"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/provision"
)

// Where the orders and their outbox live: options.Store and the -store flag.
const (
	storeDynamoDB = "dynamodb" // an orders table and an outbox table on the emulator (`make demo`)
	storePostgres = "postgres" // an orders table and sqsworker_outbox in PostgreSQL (SQSWORKER_POSTGRES_URL)
)

// The environment of a relay process: the demo runs its own executable with it.
const (
	envRelay         = "SQSWORKER_DEMO_RELAY" // the store; set, the process is a relay
	envRelayTable    = "SQSWORKER_DEMO_OUTBOX_TABLE"
	envRelayPostgres = "SQSWORKER_DEMO_OUTBOX_POSTGRES_URL"
)

// publishedLine is what a relay process prints for each entry SQS confirmed.
type publishedLine struct {
	Entry     string `json:"entry"`
	MessageID string `json:"message_id"`
}

// relayReadyLine is what a relay process prints once SIGTERM stops it gracefully; before
// that the signal's default action would kill it (exit code -1).
const relayReadyLine = "demo relay: ready"

// relayMain runs a relay process of store until SIGTERM (a graceful stop: exit 0),
// printing relayReadyLine, then a publishedLine per published entry.
func relayMain(store string) int {
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println(relayReadyLine)
	ctx := context.Background() // for the set-up: a SIGTERM during it still drains below
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "demo relay:", err)
		return 1
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fail(err)
	}
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
	if err != nil {
		return fail(err)
	}
	encoder := json.NewEncoder(os.Stdout)
	observer := outbox.ObserverFunc(func(_ context.Context, ev outbox.Event) {
		switch ev.Kind {
		case outbox.EventPublished:
			_ = encoder.Encode(publishedLine{Entry: ev.Entry.ID, MessageID: ev.MessageID})
		case outbox.EventFailed, outbox.EventStoreError, outbox.EventRetry:
			fmt.Fprintf(os.Stderr, "demo relay: %s: %v\n", ev.Kind, ev.Err)
		}
	})
	config := outbox.RelayConfig{PollInterval: 100 * time.Millisecond, BatchSize: 50, Observer: observer, DrainTimeout: 10 * time.Second}
	var relay *outbox.Relay
	switch store {
	case storeDynamoDB:
		box, err := outboxdynamo.New(outboxdynamo.Config{Table: os.Getenv(envRelayTable)})
		if err != nil {
			return fail(err)
		}
		relay, err = outboxdynamo.NewRelay(dynamodb.NewFromConfig(cfg), box, jobs, config)
		if err != nil {
			return fail(err)
		}
	case storePostgres:
		pool, err := pgxpool.New(ctx, os.Getenv(envRelayPostgres))
		if err != nil {
			return fail(err)
		}
		defer pool.Close()
		relay, err = outboxpg.NewRelay(pool, outboxpg.New(outboxpg.Config{}), jobs, outboxpg.RelayConfig{RelayConfig: config})
		if err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown store %q", store))
	}
	if err := relay.Run(signalled); err != nil {
		return fail(err)
	}
	return 0
}

// ordersStore is the orders service's database: an order and its webhook job are
// written in one transaction.
type ordersStore interface {
	// place writes an order and the job delivering body in one transaction and returns
	// the job's outbox entry id; with rollback the transaction is rolled back on purpose
	// (the id is then empty).
	place(ctx context.Context, queueURL, orderID, body string, rollback bool) (string, error)
	// backlog counts the unpublished and the failed entries.
	backlog(ctx context.Context) (pending, failed int, err error)
	// relayEnv is the environment of a relay process for this outbox.
	relayEnv() []string
	// describe names where the orders live, for the progress line.
	describe() string
	close()
}

// newOrdersStore makes (or empties) the orders service's tables for queueName.
func newOrdersStore(ctx context.Context, o options, queueName string) (ordersStore, error) {
	switch o.Store {
	case "", storeDynamoDB:
		return newDynamoOrders(ctx, queueName)
	case storePostgres:
		return newPostgresOrders(ctx, o.PostgresURL, queueName)
	}
	return nil, fmt.Errorf("demo: unknown store %q; want %s or %s", o.Store, storeDynamoDB, storePostgres)
}

// dynamoOrders keeps orders in "<queue>-orders" and their jobs in "<queue>-outbox".
type dynamoOrders struct {
	client        *dynamodb.Client
	orders, table string
	box           *outboxdynamo.Outbox
}

// ordersTables returns the DynamoDB tables of the orders service for queueName.
func ordersTables(queueName string) (orders, outboxTable string) {
	return queueName + "-orders", queueName + "-outbox"
}

func newDynamoOrders(ctx context.Context, queueName string) (*dynamoOrders, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	s := &dynamoOrders{client: dynamodb.NewFromConfig(cfg)}
	s.orders, s.table = ordersTables(queueName)
	if s.box, err = outboxdynamo.New(outboxdynamo.Config{Table: s.table}); err != nil {
		return nil, err
	}
	ordersTable := &dynamodb.CreateTableInput{
		TableName:            aws.String(s.orders),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}
	// A fresh start: the tables of an earlier run are dropped (the emulator only).
	for _, input := range []*dynamodb.CreateTableInput{ordersTable, s.box.CreateTableInput()} {
		_, err := s.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: input.TableName})
		if _, missing := errors.AsType[*types.ResourceNotFoundException](err); err != nil && !missing {
			return nil, fmt.Errorf("demo: deleting table %s: %w", aws.ToString(input.TableName), err)
		}
		if err := dynamodb.NewTableNotExistsWaiter(s.client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: input.TableName}, time.Minute); err != nil {
			return nil, fmt.Errorf("demo: waiting for table %s to go: %w", aws.ToString(input.TableName), err)
		}
		if err := provision.CreateNewTable(ctx, s.client, input); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	return s, nil
}

func (s *dynamoOrders) place(ctx context.Context, queueURL, orderID, body string, rollback bool) (string, error) {
	// The order ids are unique, so a committed order needs no condition (and a retried
	// call, which moto runs again, stays harmless).
	order := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.orders),
		Item:      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: orderID}},
	}}
	if rollback {
		// The order's condition fails (a stock check, say): DynamoDB cancels the whole
		// transaction, the outbox entry included.
		order.Put.ConditionExpression = aws.String("attribute_exists(id)")
	}
	items, entries, err := s.box.TransactItems([]types.TransactWriteItem{order}, queueURL, producer.Job{Body: body})
	if err != nil {
		return "", err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if _, cancelled := errors.AsType[*types.TransactionCanceledException](err); cancelled && rollback {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("demo: placing order %s: %w", orderID, err)
	}
	if rollback {
		return "", fmt.Errorf("demo: order %s committed although its condition should have failed", orderID)
	}
	return entries[0].ID, nil
}

func (s *dynamoOrders) backlog(ctx context.Context) (int, int, error) {
	pending, _, err := s.box.Backlog(ctx, s.client)
	if err != nil {
		return 0, 0, err
	}
	failed, err := s.box.Failed(ctx, s.client, 1000)
	return pending, len(failed), err
}

func (s *dynamoOrders) relayEnv() []string {
	return []string{envRelay + "=" + storeDynamoDB, envRelayTable + "=" + s.table}
}

func (s *dynamoOrders) describe() string {
	return fmt.Sprintf("DynamoDB tables %s and %s (TransactWriteItems)", s.orders, s.table)
}

func (s *dynamoOrders) close() {}

// postgresOrders keeps orders and sqsworker_outbox in a schema of their own.
type postgresOrders struct {
	pool   *pgxpool.Pool
	url    string
	schema string
	box    *outboxpg.Outbox
}

var unsafeSchemaCharacters = regexp.MustCompile(`[^a-z0-9_]+`)

func newPostgresOrders(ctx context.Context, baseURL, queueName string) (*postgresOrders, error) {
	if baseURL == "" {
		return nil, errors.New("demo: -store=postgres needs SQSWORKER_POSTGRES_URL (make demo sets it from localstack/env; localstack/postgres-up starts the server)")
	}
	schema := "demo_" + unsafeSchemaCharacters.ReplaceAllString(strings.ToLower(queueName), "_")
	admin, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return nil, fmt.Errorf("demo: connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+quoted+" CASCADE; CREATE SCHEMA "+quoted); err != nil {
		return nil, fmt.Errorf("demo: making schema %s: %w", schema, err)
	}
	separator := "?"
	if strings.Contains(baseURL, "?") {
		separator = "&"
	}
	s := &postgresOrders{url: baseURL + separator + "search_path=" + schema, schema: schema, box: outboxpg.New(outboxpg.Config{})}
	if s.pool, err = pgxpool.New(ctx, s.url); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := outboxpg.Migrate(ctx, s.pool); err != nil {
		s.pool.Close()
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, "CREATE TABLE orders (id text PRIMARY KEY, placed_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("demo: %w", err)
	}
	return s, nil
}

func (s *postgresOrders) place(ctx context.Context, queueURL, orderID, body string, rollback bool) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "INSERT INTO orders (id) VALUES ($1)", orderID); err != nil {
		return "", fmt.Errorf("demo: placing order %s: %w", orderID, err)
	}
	entries, err := s.box.Enqueue(ctx, tx, queueURL, producer.Job{Body: body})
	if err != nil {
		return "", err
	}
	if rollback {
		return "", tx.Rollback(ctx) // the payment failed, say: no order, no job
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("demo: committing order %s: %w", orderID, err)
	}
	return entries[0].ID, nil
}

func (s *postgresOrders) backlog(ctx context.Context) (int, int, error) {
	pending, _, err := s.box.Backlog(ctx, s.pool)
	if err != nil {
		return 0, 0, err
	}
	failed, err := s.box.Failed(ctx, s.pool, 1000)
	return pending, len(failed), err
}

func (s *postgresOrders) relayEnv() []string {
	return []string{envRelay + "=" + storePostgres, envRelayPostgres + "=" + s.url}
}

func (s *postgresOrders) describe() string {
	return fmt.Sprintf("PostgreSQL schema %s (orders and sqsworker_outbox, one pgx transaction each)", s.schema)
}

func (s *postgresOrders) close() {
	s.pool.Close()
	if admin, err := pgx.Connect(context.Background(), strings.SplitN(s.url, "search_path=", 2)[0]); err == nil {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.schema}.Sanitize()+" CASCADE")
		_ = admin.Close(context.Background())
	}
}

// relayProcess is one relay process: this executable with envRelay set.
type relayProcess struct {
	*worker
	number int
}

// stop waits (up to timeout) for the relay to print relayReadyLine, so SIGTERM finds its
// handler installed, then stops it like a worker.
func (r *relayProcess) stop(timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		text, err := os.ReadFile(r.logPath)
		if err != nil {
			return false, fmt.Errorf("demo: %w", err)
		}
		return r.exited() || strings.Contains(string(text), relayReadyLine+"\n"), nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		r.kill()
		return -1, fmt.Errorf("demo: relay %d (pid %d) did not print %q within %s; killed it (see %s)", r.number, r.pid, relayReadyLine, timeout, r.logPath)
	}
	if err != nil {
		return -1, err
	}
	return r.worker.stop(timeout)
}

func startRelayProcess(number int, env []string, logDir string) (*relayProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	environment := slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "SQSWORKER_DEMO_") })
	w, err := startWorker(self, append(environment, env...), filepath.Join(logDir, fmt.Sprintf("relay-%d.log", number)), "")
	if err != nil {
		return nil, err
	}
	return &relayProcess{worker: w, number: number}, nil
}

// published reads the relay's log: the entries it reported published.
func (r *relayProcess) published() ([]publishedLine, error) {
	file, err := os.Open(r.logPath)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer file.Close()
	var lines []publishedLine
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		var line publishedLine
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Entry != "" {
			lines = append(lines, line)
		}
	}
	return lines, scanner.Err()
}

// orderCounts is what the orders service did.
type orderCounts struct {
	committed  int
	rolledBack []string // delivery keys of the rolled-back orders
	published  int      // distinct entries the relays reported published
}

// placeOrders is the orders service: each planned delivery is an order written with its
// webhook job in one transaction, plus RolledBack orders whose transactions roll back on
// purpose. Relay processes publish the outbox meanwhile; relay 1 is SIGKILLed once
// RelayKillAfter of the orders are published. It returns when the outbox is empty and
// the surviving relay stopped gracefully.
func (d *demoRun) placeOrders(ctx context.Context) error {
	o := d.o
	var err error
	if d.plan, err = makePlan(o, d.endpoint.URL()); err != nil {
		return err
	}
	store, err := newOrdersStore(ctx, o, d.queue.Name)
	if err != nil {
		return err
	}
	d.cleanups = append(d.cleanups, store.close)
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	// Rolled-back orders, spread over the run.
	d.plan.rolledBack = map[string]bool{}
	rollbackAt := map[int]string{}
	for i := range o.RolledBack {
		key := fmt.Sprintf("r-%04d", i+1)
		d.plan.rolledBack[key] = true
		d.orders.rolledBack = append(d.orders.rolledBack, key)
		rollbackAt[(i*len(d.plan.messages))/max(o.RolledBack, 1)] = key
	}
	concurrent := o.Store == storePostgres // SKIP LOCKED: relays share the table safely
	relays := []*relayProcess{}
	startRelay := func() error {
		r, err := startRelayProcess(len(relays)+1, store.relayEnv(), d.logDir)
		if err == nil {
			relays = append(relays, r)
			d.cleanups = append(d.cleanups, r.kill)
		}
		return err
	}
	if err := startRelay(); err != nil {
		return err
	}
	if concurrent {
		if err := startRelay(); err != nil {
			return err
		}
	}
	d.printf("orders service: writing %d orders and their webhook jobs in %s; %d relays publishing",
		len(d.plan.messages)+o.RolledBack, store.describe(), len(relays))

	published := func() (map[string]publishedLine, error) {
		seen := map[string]publishedLine{}
		for _, r := range relays {
			lines, err := r.published()
			if err != nil {
				return nil, err
			}
			for _, line := range lines {
				seen[line.Entry] = line
			}
		}
		return seen, nil
	}
	threshold := max(1, int(float64(len(d.plan.messages))*o.RelayKillAfter))
	killed := false
	maybeKill := func() error {
		if killed {
			return nil
		}
		seen, err := published()
		if err != nil || len(seen) < threshold {
			return err
		}
		relays[0].kill()
		killed = true
		d.printf("SIGKILLed relay 1 (pid %d) after %d of %d orders were published", relays[0].pid, len(seen), len(d.plan.messages))
		if !concurrent {
			if err := startRelay(); err != nil {
				return err
			}
			d.printf("started relay 2 in its place (one relay per DynamoDB outbox at a time)")
		}
		return nil
	}

	entryKeys := map[string]string{} // outbox entry id → delivery key
	for i, m := range d.plan.messages {
		if key, ok := rollbackAt[i]; ok {
			body, _ := json.Marshal(map[string]any{"deliveryId": key, "url": d.endpoint.URL() + "/hooks/rolled-back", "payload": map[string]any{"event": "invoice.paid"}})
			if _, err := store.place(waitCtx, d.queue.URL, "order-"+key, string(body), true); err != nil {
				return err
			}
		}
		id, err := store.place(waitCtx, d.queue.URL, fmt.Sprintf("order-%04d", i+1), m.body, false)
		if err != nil {
			return err
		}
		entryKeys[id] = m.key
		d.orders.committed++
		if i%10 == 9 {
			if err := maybeKill(); err != nil {
				return err
			}
		}
	}
	if err := poll(waitCtx, 50*time.Millisecond, func() (bool, error) { return killed, maybeKill() }); err != nil {
		return fmt.Errorf("demo: waiting for %d published orders before killing relay 1: %w", threshold, err)
	}
	if err := poll(waitCtx, 100*time.Millisecond, func() (bool, error) {
		pending, failed, err := store.backlog(waitCtx)
		if err == nil && failed > 0 {
			err = fmt.Errorf("demo: %d outbox entries failed; see %s", failed, d.logDir)
		}
		return pending == 0, err
	}); err != nil {
		return fmt.Errorf("demo: waiting for the outbox to drain: %w", err)
	}
	for _, r := range relays[1:] {
		code, err := r.stop(20 * time.Second)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("demo: relay %d exited with code %d after SIGTERM; see %s", r.number, code, r.logPath)
		}
	}
	seen, err := published()
	if err != nil {
		return err
	}
	d.keys = map[string]string{}
	for _, line := range seen {
		d.keys[line.MessageID] = entryKeys[line.Entry]
	}
	// Every committed entry left the outbox published (the backlog is empty and none
	// failed): counted from the store, not from the relays' lines, which a SIGKILL can
	// cut between an entry's settle and its line.
	d.orders.published = d.orders.committed
	d.printf("outbox empty: %d orders committed, %d rolled back, %d entries published; relay 2 stopped with SIGTERM and exited 0",
		d.orders.committed, len(d.orders.rolledBack), d.orders.published)
	return nil
}
