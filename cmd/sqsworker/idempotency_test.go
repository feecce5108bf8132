package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/table"
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

// TestCLIIdempotencyStaysInItsNamespace: `idempotency get/delete` reach only idempotency
// records. A KEY spelled like another subsystem's item is derived into the idempotency
// namespace; --stored refuses a key outside it; an item under an idempotency key that is
// not a record is reported, and deleted only with --force. The unique job's planted item
// is untouched throughout.
func TestCLIIdempotencyStaysInItsNamespace(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	name := testenv.NewTable(t, db)
	text := func(s string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: s} }
	unique := map[string]dbtypes.AttributeValue{table.PartitionKey: text("unique#order-42"), "owner": text("o"), "expiry_ms": &dbtypes.AttributeValueMemberN{Value: "1893456000000"}}
	foreign := map[string]dbtypes.AttributeValue{table.PartitionKey: text("idempotency##odd"), "owner": text("o")}
	for _, item := range []map[string]dbtypes.AttributeValue{unique, foreign} {
		if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	if r := want(t, exitError, "idempotency", "delete", "unique#order-42", "--table", name, "--force"); !strings.Contains(r.stderr, `no idempotency record for key "idempotency##unique#order-42"`) {
		t.Errorf("delete unique#order-42: %s", r.stderr)
	}
	if r := cli(t, nil, "idempotency", "delete", "unique#order-42", "--stored", "--table", name, "--force"); r.code != exitUsage || !strings.Contains(r.stderr, "is not an idempotency record's key") {
		t.Errorf("delete --stored unique#order-42: exit %d %s", r.code, r.stderr)
	}
	if r := want(t, exitError, "idempotency", "get", "odd", "--table", name); !strings.Contains(r.stderr, "not an idempotency record") || !strings.Contains(r.stderr, "owner:S") {
		t.Errorf("get of a foreign item: %s", r.stderr)
	}
	if r := want(t, exitError, "idempotency", "delete", "odd", "--table", name); !strings.Contains(r.stderr, "not an idempotency record") {
		t.Errorf("delete of a foreign item without --force: %s", r.stderr)
	}
	if r := want(t, exitOK, "idempotency", "delete", "odd", "--table", name, "--force"); !strings.Contains(r.stdout, `Deleted the item "idempotency##odd" (not an idempotency record)`) {
		t.Errorf("delete --force of a foreign item: %s", r.stdout)
	}
	output, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(name), Key: table.KeyAttribute("unique#order-42"), ConsistentRead: aws.Bool(true)})
	if err != nil || len(output.Item) != len(unique) {
		t.Errorf("the unique job's item: %v, %v; want it untouched", output.Item, err)
	}
}
