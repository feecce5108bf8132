package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// keys returns every partition key in the table, sorted.
func (e *emulatorTable) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	paginator := dynamodb.NewScanPaginator(e.client, &dynamodb.ScanInput{TableName: aws.String(e.name), ConsistentRead: aws.Bool(true)})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, item := range page.Items {
			keys = append(keys, item["id"].(*types.AttributeValueMemberS).Value)
		}
	}
	slices.Sort(keys)
	return keys
}

// runKeys runs one message per key through the middleware on a fresh emulator table
// (key function: the message id; no payload validation) and returns the handler calls
// per key and the table's partition keys.
func runKeys(t *testing.T, prefix string, keys ...string) (map[string]int, []string) {
	t.Helper()
	table := newEmulatorTable(t)
	calls := map[string]int{}
	handler := sqsworker.Chain(sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		calls[m.ID]++
		return nil
	}), idempotency.Middleware(table.store(), idempotency.Config{
		KeyPrefix:   prefix,
		PayloadHash: func(*sqsworker.Message) (string, error) { return "", nil },
	}))
	for _, key := range keys {
		if err := handler.Handle(t.Context(), &sqsworker.Message{ID: key, Body: "{}"}); err != nil {
			t.Fatalf("key of %d bytes: %v", len(key), err)
		}
	}
	return calls, table.keys(t)
}

// TestKeyPrefixCountsTowardTheKeyLimit: a 1100-byte prefix and a 1024-byte key made a
// 2125-byte partition key, which DynamoDB rejects (2048 bytes at most), so the message
// failed on every receive. The prefix now counts: the key is digested.
func TestKeyPrefixCountsTowardTheKeyLimit(t *testing.T) {
	t.Parallel()
	prefix, key := strings.Repeat("p", 1100), strings.Repeat("k", 1024)
	calls, stored := runKeys(t, prefix, key)
	if calls[key] != 1 || len(stored) != 1 {
		t.Fatalf("handler calls %d, records %d; want 1 and 1", calls[key], len(stored))
	}
	if got := len(stored[0]); got > idempotency.MaxStoredKeyBytes {
		t.Errorf("stored key is %d bytes; DynamoDB's limit is %d", got, idempotency.MaxStoredKeyBytes)
	}
	sum := sha256.Sum256([]byte(key))
	if want := "idempotency#" + prefix + "#sha256:" + hex.EncodeToString(sum[:]); stored[0] != want {
		t.Errorf("stored key = %.40q...; want the prefix and the key's digest", stored[0])
	}
	// The longest key a short prefix keeps as it is is still 1024 bytes.
	if got, _ := idempotency.StoredKey("fn", strings.Repeat("k", 1024)); got != "idempotency#fn#"+strings.Repeat("k", 1024) {
		t.Errorf("a 1024-byte key with prefix fn was digested")
	}
}

// TestKeysThatAreNotUTF8DoNotCollide: DynamoDB strings are UTF-8 and the SDK sent both
// "k\xff" and "k\xfe" as "k\ufffd": one record, so the second key's handler never ran.
func TestKeysThatAreNotUTF8DoNotCollide(t *testing.T) {
	t.Parallel()
	calls, stored := runKeys(t, "", "k\xff", "k\xfe")
	if calls["k\xff"] != 1 || calls["k\xfe"] != 1 {
		t.Errorf("handler calls %v; want 1 for each key", calls)
	}
	if len(stored) != 2 {
		t.Errorf("records %q; want 2", stored)
	}
	for _, key := range stored {
		if !utf8.ValidString(key) || strings.ContainsRune(key, utf8.RuneError) {
			t.Errorf("stored key %q is not clean UTF-8", key)
		}
	}
}

// TestDigestSpellingIsNotAKey: a short key spelled "sha256:<hex of a long key>" landed on
// the long key's record; the second handler never ran.
func TestDigestSpellingIsNotAKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1025)
	sum := sha256.Sum256([]byte(long))
	spelled := "sha256:" + hex.EncodeToString(sum[:])
	calls, stored := runKeys(t, "fn", long, spelled)
	if calls[long] != 1 || calls[spelled] != 1 || len(stored) != 2 {
		t.Errorf("handler calls long=%d spelled=%d, records %d; want 1, 1, 2", calls[long], calls[spelled], len(stored))
	}
}

// TestKeyPrefixValidated: a prefix that cannot fit with a digested key, is not UTF-8 or
// contains the separator "#" (prefix "a#b" with key "c" would be prefix "a" with key
// "b#c"), is a configuration error, named.
func TestKeyPrefixValidated(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{strings.Repeat("p", idempotency.MaxKeyPrefixBytes+1), "p\xff", "web#hook"} {
		if err := (idempotency.Config{KeyPrefix: prefix}).Validate(); !errors.Is(err, idempotency.ErrInvalidKeyPrefix) {
			t.Errorf("Validate(prefix of %d bytes) = %v; want ErrInvalidKeyPrefix", len(prefix), err)
		}
		if _, err := idempotency.StoredKey(prefix, "k"); !errors.Is(err, idempotency.ErrInvalidKeyPrefix) {
			t.Errorf("StoredKey(prefix of %d bytes) = %v; want ErrInvalidKeyPrefix", len(prefix), err)
		}
	}
	if err := (idempotency.Config{KeyPrefix: strings.Repeat("p", idempotency.MaxKeyPrefixBytes)}).Validate(); err != nil {
		t.Errorf("Validate(prefix of MaxKeyPrefixBytes) = %v; want nil", err)
	}
}
