package idempotency_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// fakeClock is a settable idempotency.Clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// start is a fixed, whole-millisecond "now" for fake clocks (moto never applies TTL, so
// any time works against the emulator too).
var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// deadlineContext is a context whose Deadline reports a fixed time without ever being
// cancelled by it: the fake context of C07, usable with a fake clock.
type deadlineContext struct {
	context.Context
	deadline time.Time
}

func (c deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

func withDeadline(t *testing.T, deadline time.Time) context.Context {
	return deadlineContext{Context: t.Context(), deadline: deadline}
}

func noJitter() float64 { return 0 }

// effects counts committed side effects per key.
type effects struct {
	mu     sync.Mutex
	counts map[string]int
}

func (e *effects) add(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	e.counts[key]++
}

func (e *effects) get(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[key]
}

// jsonMessage builds a message whose body is the JSON of body.
func jsonMessage(id string, body map[string]any) *sqsworker.Message {
	encoded, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return &sqsworker.Message{ID: id, Body: string(encoded), ReceiveCount: 1, QueueURL: "https://sqs.test/q"}
}

func field(t *testing.T, message *sqsworker.Message, name string) string {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal([]byte(message.Body), &body); err != nil {
		t.Fatalf("decoding body: %v", err)
	}
	return fmt.Sprint(body[name])
}

// wantOutcome checks Classify(err) against want, comparing Kind, Delay and Reason.
func wantOutcome(t *testing.T, label string, err error, want sqsworker.Outcome) {
	t.Helper()
	got := sqsworker.Classify(err)
	if got.Kind != want.Kind || got.Delay != want.Delay || got.Reason != want.Reason {
		t.Errorf("%s: outcome = {%s %s %q} (err %v); want {%s %s %q}",
			label, got.Kind, got.Delay, got.Reason, err, want.Kind, want.Delay, want.Reason)
	}
}

var (
	outcomeDelete   = sqsworker.Outcome{Kind: sqsworker.OutcomeDelete}
	outcomeMismatch = sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: "IdempotencyPayloadMismatch"}
)

func outcomeDefer(delay time.Duration) sqsworker.Outcome {
	return sqsworker.Outcome{Kind: sqsworker.OutcomeDefer, Delay: delay, Reason: "IdempotencyInProgress"}
}

// countingAPI wraps a DynamoDBAPI and counts calls per operation.
type countingAPI struct {
	idempotency.DynamoDBAPI
	puts, gets, updates, deletes atomic.Int64
}

func (c *countingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	return c.DynamoDBAPI.PutItem(ctx, in, opts...)
}

func (c *countingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.DynamoDBAPI.GetItem(ctx, in, opts...)
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

func (c *countingAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.deletes.Add(1)
	return c.DynamoDBAPI.DeleteItem(ctx, in, opts...)
}

// counts returns "puts/gets/updates/deletes".
func (c *countingAPI) counts() string {
	return fmt.Sprintf("put=%d get=%d update=%d delete=%d", c.puts.Load(), c.gets.Load(), c.updates.Load(), c.deletes.Load())
}

// emulatorTable is a fresh table on the DynamoDB emulator.
type emulatorTable struct {
	client *dynamodb.Client
	name   string
	api    *countingAPI
}

func newEmulatorTable(t *testing.T) *emulatorTable {
	t.Helper()
	client := testenv.DynamoDB(t)
	return &emulatorTable{client: client, name: testenv.NewTable(t, client), api: &countingAPI{DynamoDBAPI: client}}
}

func (e *emulatorTable) store(options ...idempotency.DynamoDBOption) *idempotency.DynamoDBStore {
	return idempotency.NewDynamoDBStore(e.api, e.name, options...)
}

// roundTrip measures the emulator's DynamoDB round trip on this table now: the slowest of
// three consistent reads. Tests derive real-time leases from it.
func (e *emulatorTable) roundTrip(t *testing.T) time.Duration {
	t.Helper()
	var slowest time.Duration
	for range 3 {
		start := time.Now()
		e.raw(t, "round-trip-probe")
		slowest = max(slowest, time.Since(start))
	}
	return slowest
}

// stored is the stored key of key without a prefix ([idempotency.StoredKey]).
func stored(key string) string {
	storedKey, err := idempotency.StoredKey("", key)
	if err != nil {
		panic(err)
	}
	return storedKey
}

// raw returns the item stored for key (the middleware's stored key of key, no prefix) rendered attribute by attribute ("name=S:value",
// "name=N:123", "name=B:hex"), sorted: a byte-for-byte view of the stored item. Empty
// when there is no item.
func (e *emulatorTable) raw(t *testing.T, key string) string {
	t.Helper()
	output, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.name),
		Key:            map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: stored(key)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem(%q): %v", key, err)
	}
	return renderItem(output.Item)
}

func renderItem(item map[string]types.AttributeValue) string {
	var parts []string
	for name, value := range item {
		switch value := value.(type) {
		case *types.AttributeValueMemberS:
			parts = append(parts, name+"=S:"+value.Value)
		case *types.AttributeValueMemberN:
			parts = append(parts, name+"=N:"+value.Value)
		case *types.AttributeValueMemberB:
			parts = append(parts, name+"=B:"+hex.EncodeToString(value.Value))
		default:
			parts = append(parts, fmt.Sprintf("%s=%T", name, value))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// attribute returns one attribute of a rendered item ("" when absent).
func attribute(rendered, name string) string {
	for part := range strings.FieldsSeq(rendered) {
		if value, ok := strings.CutPrefix(part, name+"="); ok {
			return value
		}
	}
	return ""
}

// scanCount counts the table's items matching filter (all items when filter is "").
func (e *emulatorTable) scanCount(t *testing.T, filter string, names map[string]string, values map[string]types.AttributeValue) int {
	t.Helper()
	input := &dynamodb.ScanInput{TableName: aws.String(e.name), ConsistentRead: aws.Bool(true)}
	if filter != "" {
		input.FilterExpression = aws.String(filter)
		input.ExpressionAttributeNames = names
		input.ExpressionAttributeValues = values
	}
	count := 0
	paginator := dynamodb.NewScanPaginator(e.client, input)
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		count += int(page.Count)
	}
	return count
}

// inProgressWithoutExpiry counts IN_PROGRESS items lacking in_progress_expiry (C07).
func (e *emulatorTable) inProgressWithoutExpiry(t *testing.T) int {
	t.Helper()
	return e.scanCount(t, "#status = :in_progress AND attribute_not_exists(#expiry)",
		map[string]string{"#status": "status", "#expiry": "in_progress_expiry"},
		map[string]types.AttributeValue{":in_progress": &types.AttributeValueMemberS{Value: "IN_PROGRESS"}})
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(buffer *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buffer, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// eventLog is an idempotency.Observer that keeps the kinds it is told, in order.
type eventLog struct {
	mu    sync.Mutex
	kinds []idempotency.EventKind
}

func (l *eventLog) ObserveIdempotency(_ context.Context, ev idempotency.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, ev.Kind)
}

// take returns the kinds told since the last take and forgets them.
func (l *eventLog) take() []idempotency.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	kinds := l.kinds
	l.kinds = nil
	return kinds
}
