package idempotency_test

import (
	"context"
	"errors"
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
	"github.com/sqsworker/sqsworker/table"
)

// keyRecorder wraps a DynamoDBAPI and records the partition key of every call.
type keyRecorder struct {
	idempotency.DynamoDBAPI
	mu   sync.Mutex
	keys []string // "Operation key"
}

func (r *keyRecorder) note(operation string, item map[string]types.AttributeValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, _ := item[table.PartitionKey].(*types.AttributeValueMemberS)
	if key == nil {
		r.keys = append(r.keys, operation+" <no key>")
		return
	}
	r.keys = append(r.keys, operation+" "+key.Value)
}

func (r *keyRecorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

func (r *keyRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note("PutItem", in.Item)
	return r.DynamoDBAPI.PutItem(ctx, in, opts...)
}

func (r *keyRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note("GetItem", in.Key)
	return r.DynamoDBAPI.GetItem(ctx, in, opts...)
}

func (r *keyRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note("UpdateItem", in.Key)
	return r.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

func (r *keyRecorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.note("DeleteItem", in.Key)
	return r.DynamoDBAPI.DeleteItem(ctx, in, opts...)
}

// rawKey renders the item stored under the exact partition key key (raw takes an
// idempotency key and derives its stored key).
func (e *emulatorTable) rawKey(t *testing.T, key string) string {
	t.Helper()
	output, err := e.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &e.name, Key: table.KeyAttribute(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem(%q): %v", key, err)
	}
	return renderItem(output.Item)
}

// TestHostileKeysStayInTheIdempotencyNamespace (moto): the README puts the idempotency
// middleware (no key prefix) and the scheduler in one table; a message whose idempotency
// key was "unique#<tick id>" read the producer's unique-key item for that tick instead of
// an idempotency record. Now every key a sender chooses lands in the idempotency
// namespace: the other subsystems' planted items stay byte for byte as they were, every
// call names a key under "idempotency#", and each hostile message runs its handler once
// with one PutItem and one UpdateItem.
func TestHostileKeysStayInTheIdempotencyNamespace(t *testing.T) {
	t.Parallel()
	emulator := newEmulatorTable(t)
	future := time.Now().Add(time.Hour)
	planted := map[string]map[string]types.AttributeValue{
		"unique#order-42": {"id": str("unique#order-42"), "owner": str("o1"), "message_id": str("m-orig"),
			"expiration": epochSeconds(future), "expiry_ms": epochMillis(future)},
		"scheduler#lease#default": {"id": str("scheduler#lease#default"), "owner": str("replica-1"),
			"token": &types.AttributeValueMemberN{Value: "7"}, "expiry_ms": epochMillis(future), "acquired_ms": epochMillis(time.Now())},
		"scheduler#schedule#nightly": {"id": str("scheduler#schedule#nightly"), "tick_ms": epochMillis(time.Now()),
			"tick_id": str("nightly/2026-11-29T01:30:00Z"), "token": &types.AttributeValueMemberN{Value: "7"}, "sent": &types.AttributeValueMemberBOOL{Value: true}},
		// Another middleware's record (prefix "webhook") in the same table.
		"idempotency#webhook#d-1": {"id": str("idempotency#webhook#d-1"), "status": str("COMPLETED"), "lease": str("L"),
			"expiration": epochSeconds(future)},
	}
	before := map[string]string{}
	for key, item := range planted {
		emulator.putRaw(t, item)
		before[key] = emulator.rawKey(t, key)
	}
	hostile := []string{
		"unique#order-42",            // the exact stored form of the unique job's key
		"scheduler#lease#default",    // the scheduler's lease
		"scheduler#schedule#nightly", // a schedule's state
		"idempotency#webhook#d-1",    // the exact stored form of another prefix's record
		"webhook#d-1",                // that record as older versions stored it
		"idempotency##x",             // what this middleware's own layout looks like
		"#", "unique", "scheduler#",
		"unique#k\xff\xfe",                             // not UTF-8
		"unique#" + strings.Repeat("o", 3000),          // over DynamoDB's key limit
		"sha256:" + strings.Repeat("0", 64),            // a digest's spelling
		strings.Repeat("scheduler#lease#", 128),        // over-long and full of separators
		"limit#tenant", "job#1", "cancel#1", "batch#1", // reserved namespaces
	}
	for _, prefix := range []string{"", "jobs"} {
		recorder := &keyRecorder{DynamoDBAPI: emulator.client}
		var calls atomic.Int64
		handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			calls.Add(1)
			return nil
		}), idempotency.Middleware(idempotency.NewDynamoDBStore(recorder, emulator.name), idempotency.Config{KeyPrefix: prefix}))
		for i, key := range hostile {
			message := &sqsworker.Message{ID: "m-" + string(rune('a'+i)), Body: "{}", MessageAttributes: map[string]sqsworker.MessageAttribute{
				sqsworker.AttributeIdempotencyKey: {DataType: "String", StringValue: key}}}
			if err := handler.Handle(t.Context(), message); err != nil {
				t.Errorf("prefix %q, key %.40q: %v; want the handler to run", prefix, key, err)
			}
		}
		if got := calls.Load(); got != int64(len(hostile)) {
			t.Errorf("prefix %q: handler calls %d; want %d (one per key)", prefix, got, len(hostile))
		}
		want := "idempotency#" + prefix + "#"
		puts, updates := 0, 0
		for _, call := range recorder.calls() {
			operation, key, _ := strings.Cut(call, " ")
			if !strings.HasPrefix(key, want) {
				t.Errorf("prefix %q: %s on %.60q, outside %q", prefix, operation, key, want)
			}
			puts += map[bool]int{true: 1}[operation == "PutItem"]
			updates += map[bool]int{true: 1}[operation == "UpdateItem"]
		}
		if calls := len(recorder.calls()); puts != len(hostile) || updates != len(hostile) || calls != 2*len(hostile) {
			t.Errorf("prefix %q: %d calls (%d PutItem, %d UpdateItem); want one claim and one completion per key", prefix, calls, puts, updates)
		}
	}
	for key, want := range before {
		if got := emulator.rawKey(t, key); got != want {
			t.Errorf("planted item %s changed:\n%s\nwant\n%s", key, got, want)
		}
	}
}

// TestForeignItemUnderAnIdempotencyKeyIsAnError (moto): an item under an idempotency key
// that is not an idempotency record used to be taken for one: without a lease it was a
// claim in progress (the message deferred until its lease expiry), with an unknown or no
// status an unlogged "inconsistent state". Now it is an error matching
// ErrMalformedRecord, logged once at error level, reported as EventMalformedRecord; the
// handler does not run, nothing is written, and the message fails (retryable), not
// deferred.
func TestForeignItemUnderAnIdempotencyKeyIsAnError(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(time.Hour)
	for name, item := range map[string]map[string]types.AttributeValue{
		"unique job's item": {"owner": str("o1"), "message_id": str("m-orig"), "expiration": epochSeconds(future), "expiry_ms": epochMillis(future)},
		"no lease":          {"status": str("IN_PROGRESS"), "expiration": epochSeconds(future), "in_progress_expiry": epochMillis(future)},
		"unknown status":    {"status": str("DONE"), "lease": str("L"), "expiration": epochSeconds(future)},
		"lease is a number": {"status": str("IN_PROGRESS"), "lease": &types.AttributeValueMemberN{Value: "7"}, "expiration": epochSeconds(future), "in_progress_expiry": epochMillis(future)},
		// (An expiration that is text: moto answers the claim's "#expiration < :now" with
		// HTTP 500 where DynamoDB evaluates it as false; localstack/README.md.)
		"deadline is text": {"status": str("COMPLETED"), "lease": str("L"), "expiration": epochSeconds(future), "in_progress_deadline": str("soon")},
		"data is text":     {"status": str("COMPLETED"), "lease": str("L"), "expiration": epochSeconds(future), "data": str("200 OK")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			emulator := newEmulatorTable(t)
			item[table.PartitionKey] = str(stored("K"))
			emulator.putRaw(t, item)
			before := emulator.raw(t, "K")
			var logs logBuffer
			var events eventLog
			var calls atomic.Int64
			handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				calls.Add(1)
				return nil
			}), idempotency.Middleware(emulator.store(), idempotency.Config{
				KeyFunc: idempotency.KeyFromJSONField("id"), Logger: newLogger(&logs), Observer: &events, DuplicateWait: 300 * time.Millisecond,
			}))
			err := handler.Handle(t.Context(), jsonMessage("m1", map[string]any{"id": "K"}))
			if outcome := sqsworker.Classify(err); !errors.Is(err, idempotency.ErrMalformedRecord) || outcome.Kind != sqsworker.OutcomeRetry {
				t.Errorf("outcome %s (%v); want a retryable error matching ErrMalformedRecord", outcome.Kind, err)
			}
			if calls.Load() != 0 {
				t.Errorf("handler calls %d; want 0", calls.Load())
			}
			if got := events.take(); len(got) != 1 || got[0] != idempotency.EventMalformedRecord {
				t.Errorf("events %v; want [malformed-record]", got)
			}
			lines := strings.Count(logs.String(), `"level":"ERROR","msg":"idempotency: the item under the key is not an idempotency record`)
			if lines != 1 || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("log:\n%s\nwant exactly one line, the error naming the item", logs.String())
			}
			if after := emulator.raw(t, "K"); after != before {
				t.Errorf("item changed: %s -> %s", before, after)
			}
		})
	}
}
