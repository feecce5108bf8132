package scheduler_test

// Helpers for tests that run a scheduler on a fake clock: a testing/synctest bubble,
// whose time advances only when every goroutine in it is blocked on something other
// than I/O, against the real emulators (a call to moto or SQS takes no fake time).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/scheduler"
)

// bubbleClients returns SQS and DynamoDB clients whose HTTP connections belong to the
// calling bubble, without keep-alive (an idle connection's reader would never let the
// fake clock advance).
func bubbleClients(cfg aws.Config) (*sqs.Client, *dynamodb.Client) {
	cfg = cfg.Copy()
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg)
}

// dynamoCall is one call a countingDynamoDB saw: the operation, the item ids it names
// and the fake time.
type dynamoCall struct {
	op   string
	ids  []string
	expr string
	at   time.Time
}

// countingDynamoDB records every call. After limit calls (a loop that spins on an item
// instead of waiting), every call fails, so the fake clock can advance and the test end.
// before, if set, runs before each call is forwarded.
type countingDynamoDB struct {
	client *dynamodb.Client
	limit  int
	before func(call dynamoCall)

	mu    sync.Mutex
	calls []dynamoCall
}

var errSpinning = errors.New("test: too many DynamoDB calls (spinning)")

func (c *countingDynamoDB) record(op, expr string, keys ...map[string]dynamodbtypes.AttributeValue) error {
	call := dynamoCall{op: op, expr: expr, at: time.Now()}
	for _, key := range keys {
		if id, ok := key["id"].(*dynamodbtypes.AttributeValueMemberS); ok {
			call.ids = append(call.ids, id.Value)
		}
	}
	c.mu.Lock()
	c.calls = append(c.calls, call)
	n := len(c.calls)
	c.mu.Unlock()
	if c.limit > 0 && n > c.limit {
		return errSpinning
	}
	if c.before != nil {
		c.before(call)
	}
	return nil
}

// count returns how many calls of op named an id starting with prefix ("" for any).
func (c *countingDynamoDB) count(op, prefix string) int {
	return len(c.find(op, prefix))
}

func (c *countingDynamoDB) find(op, prefix string) []dynamoCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []dynamoCall
	for _, call := range c.calls {
		if op != "" && call.op != op {
			continue
		}
		for _, id := range call.ids {
			if strings.HasPrefix(id, prefix) {
				out = append(out, call)
				break
			}
		}
	}
	return out
}

func (c *countingDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := c.record("GetItem", "", in.Key); err != nil {
		return nil, err
	}
	return c.client.GetItem(ctx, in, opts...)
}

func (c *countingDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.record("PutItem", aws.ToString(in.ConditionExpression), in.Item); err != nil {
		return nil, err
	}
	return c.client.PutItem(ctx, in, opts...)
}

func (c *countingDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.record("UpdateItem", aws.ToString(in.ConditionExpression), in.Key); err != nil {
		return nil, err
	}
	return c.client.UpdateItem(ctx, in, opts...)
}

func (c *countingDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := c.record("DeleteItem", aws.ToString(in.ConditionExpression), in.Key); err != nil {
		return nil, err
	}
	return c.client.DeleteItem(ctx, in, opts...)
}

func (c *countingDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var keys []map[string]dynamodbtypes.AttributeValue
	for _, item := range in.TransactItems {
		switch {
		case item.Update != nil:
			keys = append(keys, item.Update.Key)
		case item.Put != nil:
			keys = append(keys, item.Put.Item)
		case item.ConditionCheck != nil:
			keys = append(keys, item.ConditionCheck.Key)
		}
	}
	if err := c.record("TransactWriteItems", "", keys...); err != nil {
		return nil, err
	}
	return c.client.TransactWriteItems(ctx, in, opts...)
}

// logRecord is one log line a logRecorder kept.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
	at    time.Time
}

// logRecorder is a slog.Handler that keeps every record (and echoes it to the test log).
type logRecorder struct {
	t     *testing.T
	mu    *sync.Mutex
	lines *[]logRecord
	with  []slog.Attr
}

func newLogRecorder(t *testing.T) *logRecorder {
	return &logRecorder{t: t, mu: &sync.Mutex{}, lines: &[]logRecord{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	record := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}, at: r.Time}
	add := func(a slog.Attr) bool {
		record.attrs[a.Key] = a.Value.Resolve().String()
		return true
	}
	for _, a := range h.with {
		add(a)
	}
	r.Attrs(add)
	h.mu.Lock()
	*h.lines = append(*h.lines, record)
	h.mu.Unlock()
	h.t.Logf("%s %s %s %v", r.Time.UTC().Format("2006-01-02T15:04:05.000"), r.Level, r.Message, record.attrs)
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.with = append(append([]slog.Attr{}, h.with...), attrs...)
	return &c
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// matching returns the records whose message starts with prefix.
func (h *logRecorder) matching(prefix string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range *h.lines {
		if strings.HasPrefix(r.msg, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// putItem writes item (attribute name → S, N or BOOL value) to table, as another
// program would.
func putItem(t *testing.T, client *dynamodb.Client, table string, item map[string]any) {
	t.Helper()
	values := map[string]dynamodbtypes.AttributeValue{}
	for name, value := range item {
		switch v := value.(type) {
		case string:
			values[name] = &dynamodbtypes.AttributeValueMemberS{Value: v}
		case int64:
			values[name] = &dynamodbtypes.AttributeValueMemberN{Value: fmt.Sprint(v)}
		case int:
			values[name] = &dynamodbtypes.AttributeValueMemberN{Value: fmt.Sprint(v)}
		case bool:
			values[name] = &dynamodbtypes.AttributeValueMemberBOOL{Value: v}
		default:
			t.Fatalf("putItem: %T", value)
		}
	}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: values}); err != nil {
		t.Fatal(err)
	}
}

// since returns the fake times of calls relative to start.
func since(start time.Time, calls []dynamoCall) []time.Duration {
	var out []time.Duration
	for _, call := range calls {
		out = append(out, call.at.Sub(start))
	}
	return out
}

var _ scheduler.DynamoDBAPI = (*countingDynamoDB)(nil)
