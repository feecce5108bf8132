package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/faultproxy"
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

// A DeleteItem whose response is lost is retried by the SDK; the retry's lease condition
// then fails on a record that this very call removed. The CLI reports the record deleted
// (it is gone), not "changed since it was read" (seen as a flaky TestCLIIdempotency when a
// local response was lost under load).
func TestCLIIdempotencyDeleteWithLostResponse(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	table := testenv.NewTable(t, db)
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, table), idempotency.Config{
			KeyFunc: idempotency.KeyFromJSONField("id"),
		}))
	if err := handler.Handle(t.Context(), &sqsworker.Message{ID: "m-1", Body: `{"id":"lost-1"}`}); err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"DeleteItem"}, Fraction: 1, Times: 1, Reset: true})
	r := cli(t, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL}, "idempotency", "delete", "lost-1", "--table", table, "--force")
	if r.code != exitOK {
		t.Fatalf("delete: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitOK, r.stdout, r.stderr)
	}
	var deletes []faultproxy.Call
	for _, call := range proxy.Calls() {
		if call.Operation == "DeleteItem" {
			deletes = append(deletes, call)
		}
	}
	if len(deletes) != 2 || deletes[0].Fault != "reset" {
		t.Fatalf("DeleteItem calls = %+v; want a reset one and its retry", deletes)
	}
	r = want(t, exitError, "idempotency", "get", "lost-1", "--table", table)
	if !strings.Contains(r.stderr, "no idempotency record") {
		t.Fatalf("get after delete: %s", r.stderr)
	}
}
