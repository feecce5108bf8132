package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testenv"
)

// TestCLIIdempotencyLongKey: a key over 1024 bytes, stored by the middleware as its
// digest, is found and deleted by the key the key function returned.
func TestCLIIdempotencyLongKey(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	long := strings.Repeat("order-", 250) // 1500 bytes
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, table), idempotency.Config{
			KeyPrefix: "webhook", KeyFunc: idempotency.KeyFromJSONField("id"),
		}))
	if err := handler.Handle(t.Context(), &sqsworker.Message{ID: "m-1", Body: `{"id":"` + long + `"}`}); err != nil {
		t.Fatal(err)
	}
	stored, err := idempotency.StoredKey("webhook", long)
	if err != nil {
		t.Fatal(err)
	}
	got := decode[recordView](t, want(t, exitOK, "idempotency", "get", long, "--table", table, "--prefix", "webhook", "-o", "json"))
	if got.Key != stored || got.Status != idempotency.StatusCompleted {
		t.Fatalf("get = key %q status %s; want %q COMPLETED", got.Key, got.Status, stored)
	}
	want(t, exitOK, "idempotency", "delete", long, "--table", table, "--prefix", "webhook", "--force")
	r := want(t, exitError, "idempotency", "get", long, "--table", table, "--prefix", "webhook")
	if !strings.Contains(r.stderr, "no idempotency record") {
		t.Fatalf("get after delete: %s", r.stderr)
	}
}
