package idempotency_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

func TestKeyFromJSONField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body, want string
		wantMissing            bool
	}{
		{"TopLevelString", "deliveryId", `{"deliveryId":"D-1"}`, "D-1", false},
		{"Nested", "order.id", `{"order":{"id":"O-9"}}`, "O-9", false},
		{"ArrayIndex", "items.1.sku", `{"items":[{"sku":"a"},{"sku":"b"}]}`, "b", false},
		{"NumberAsWritten", "n", `{"n":12345678901234567890}`, "12345678901234567890", false},
		{"Bool", "b", `{"b":true}`, "true", false},
		{"ObjectSortedKeys", "o", `{"o":{"z":1,"a":2}}`, `{"a":2,"z":1}`, false},
		{"Missing", "id", `{"other":1}`, "", true},
		{"Null", "id", `{"id":null}`, "", true},
		{"Empty", "id", `{"id":""}`, "", true},
		{"IndexOutOfRange", "a.5", `{"a":[1]}`, "", true},
		{"ThroughScalar", "a.b", `{"a":1}`, "", true},
		{"NotJSON", "id", `id=1`, "", true},
		{"TrailingData", "id", `{"id":"x"} {}`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := idempotency.KeyFromJSONField(tc.path)(&sqsworker.Message{Body: tc.body})
			if tc.wantMissing {
				if !errors.Is(err, idempotency.ErrKeyMissing) {
					t.Errorf("= %q, %v; want an error matching ErrKeyMissing", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestKeyFromMessageAttribute(t *testing.T) {
	t.Parallel()
	message := &sqsworker.Message{MessageAttributes: map[string]sqsworker.MessageAttribute{
		"eventId": {DataType: "String", StringValue: "E-1"},
		"binary":  {DataType: "Binary", BinaryValue: []byte{0xca, 0xfe}},
		"empty":   {DataType: "String"},
	}}
	tests := []struct {
		name, attribute, want string
	}{
		{"String", "eventId", "E-1"},
		{"BinaryAsHex", "binary", "cafe"},
		{"Empty", "empty", ""},
		{"Missing", "nope", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := idempotency.KeyFromMessageAttribute(tc.attribute)(message)
			if tc.want == "" {
				if !errors.Is(err, idempotency.ErrKeyMissing) {
					t.Errorf("= %q, %v; want ErrKeyMissing", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestKeyFromMessageID(t *testing.T) {
	t.Parallel()
	if got, err := idempotency.KeyFromMessageID(&sqsworker.Message{ID: "m-1"}); got != "m-1" || err != nil {
		t.Errorf("= %q, %v; want m-1", got, err)
	}
	if _, err := idempotency.KeyFromMessageID(&sqsworker.Message{}); !errors.Is(err, idempotency.ErrKeyMissing) {
		t.Errorf("empty id: %v; want ErrKeyMissing", err)
	}
}

func TestHashJSONFields(t *testing.T) {
	t.Parallel()
	hash := func(t *testing.T, fields []string, body string) string {
		t.Helper()
		got, err := idempotency.HashJSONFields(fields...)(&sqsworker.Message{Body: body})
		if err != nil {
			t.Fatalf("HashJSONFields(%v)(%s): %v", fields, body, err)
		}
		return got
	}
	base := hash(t, []string{"amount", "currency"}, `{"orderId":"O-9","amount":100,"currency":"EUR"}`)
	tests := []struct {
		name   string
		fields []string
		body   string
		same   bool
	}{
		{"OtherFieldsIgnored", []string{"amount", "currency"}, `{"orderId":"O-10","note":"x","currency":"EUR","amount":100}`, true},
		{"FieldOrderIgnored", []string{"currency", "amount"}, `{"amount":100,"currency":"EUR"}`, true},
		{"AmountDiffers", []string{"amount", "currency"}, `{"amount":250,"currency":"EUR"}`, false},
		{"NumberTextDiffers", []string{"amount", "currency"}, `{"amount":100.0,"currency":"EUR"}`, false},
		{"MissingField", []string{"amount", "currency"}, `{"amount":100}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := hash(t, tc.fields, tc.body) == base; got != tc.same {
				t.Errorf("same hash = %t; want %t", got, tc.same)
			}
		})
	}
	t.Run("NestedObjectKeyOrder", func(t *testing.T) {
		t.Parallel()
		if hash(t, []string{"a"}, `{"a":{"x":1,"y":[1,2]}}`) != hash(t, []string{"a"}, `{"a":{"y":[1,2],"x":1}}`) {
			t.Error("object key order changed the hash")
		}
	})
	t.Run("NotJSON", func(t *testing.T) {
		t.Parallel()
		if _, err := idempotency.HashJSONFields("a")(&sqsworker.Message{Body: "<xml/>"}); err == nil || !strings.HasPrefix(err.Error(), "idempotency: ") {
			t.Errorf("= %v; want an idempotency: error", err)
		}
	})
}

func TestHashBody(t *testing.T) {
	t.Parallel()
	// SHA-256 of "abc" (FIPS 180-2 test vector).
	got, err := idempotency.HashBody(&sqsworker.Message{Body: "abc"})
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want || err != nil {
		t.Errorf("HashBody(abc) = %q, %v; want %q", got, err, want)
	}
}

// TestLongKeysAreDigested: keys over 1024 bytes become "sha256:<hex>" (stored after the
// namespace and the prefix), keeping them under DynamoDB's 2048-byte partition key limit.
func TestLongKeysAreDigested(t *testing.T) {
	t.Parallel()
	f := newFlow(t, idempotency.Config{KeyPrefix: "fn", KeyFunc: idempotency.KeyFromJSONField("id")})
	long := strings.Repeat("k", 1025)
	if err := f.handler.Handle(withDeadline(t, start.Add(time.Minute)), message("m-1", `{"id":"`+long+`"}`)); err != nil {
		t.Fatal(err)
	}
	want := "idempotency#fn#sha256:" + hashOf(long)
	if _, err := f.store.Get(t.Context(), want); err != nil {
		t.Errorf("no record under %q: %v", want, err)
	}
}
