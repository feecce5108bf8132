package idempotency_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// FuzzKeyFromJSONField checks key extraction from arbitrary bodies and paths: it never
// panics, is deterministic, never returns an empty key without an error, fails only
// with ErrKeyMissing, and gives the same key for PATH in BODY as for "wrap.PATH" in
// {"wrap":BODY}. Bodies that are not one JSON document are FuzzJSONBodyStrictness's.
func FuzzKeyFromJSONField(f *testing.F) {
	f.Add("id", `{"id":"D-1"}`)
	f.Add("order.id", `{"order":{"id":"O-9"}}`)
	f.Add("items.1.sku", `{"items":[{"sku":"a"},{"sku":"b"}]}`)
	f.Add("n", `{"n":100.50}`)
	f.Add("o", `{"o":{"b":1,"a":[true,null]}}`)
	f.Add("id", `{"id":""}`)
	f.Add("id", `not json`)
	f.Add("id", `{"id":"a"} {"id":"b"}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		if path == "" {
			return // KeyFromJSONField panics on an empty path by design (a programmer error)
		}
		keyFunc := idempotency.KeyFromJSONField(path)
		message := &sqsworker.Message{ID: "m", Body: body}
		key, err := keyFunc(message)
		again, againErr := keyFunc(message)
		if key != again || (err == nil) != (againErr == nil) {
			t.Fatalf("not deterministic: %q/%v then %q/%v", key, err, again, againErr)
		}
		if err != nil {
			if !errors.Is(err, idempotency.ErrKeyMissing) {
				t.Fatalf("error %v does not match ErrKeyMissing", err)
			}
			if key != "" {
				t.Fatalf("key %q returned with error %v", key, err)
			}
			return
		}
		if key == "" {
			t.Fatal("empty key without an error")
		}
		if !json.Valid([]byte(body)) {
			return
		}
		wrapped, err := idempotency.KeyFromJSONField("wrap." + path)(&sqsworker.Message{Body: `{"wrap":` + body + `}`})
		if err != nil || wrapped != key {
			t.Fatalf("wrap.%s gives %q, %v; want %q", path, wrapped, err, key)
		}
	})
}

// FuzzHashJSONFields checks payload hashing: it never panics, is deterministic, is
// 64 hex characters, and does not change when the body's object keys are reordered or
// its whitespace changes. HashBody is checked against SHA-256 of the body.
func FuzzHashJSONFields(f *testing.F) {
	f.Add(`{"id":"k-1","amount":100,"currency":"EUR"}`, "amount", "currency")
	f.Add(`{"a":{"y":[1,{"q":2,"p":3}],"x":"s"},"b":null}`, "a", "b.c")
	f.Add(`{"n":1e3,"m":-0.0}`, "n", "m")
	f.Add(`[1,2,3]`, "0", "2")
	f.Add(`{"\u00e9":"\ud83d\ude00","k":"\u0000"}`, "\u00e9", "k")
	f.Add(`"just a string"`, "x", "y")
	f.Fuzz(func(t *testing.T, body, path1, path2 string) {
		paths := slices.DeleteFunc([]string{path1, path2}, func(p string) bool { return p == "" })
		message := &sqsworker.Message{Body: body}

		sum := sha256.Sum256([]byte(body))
		if hash, err := idempotency.HashBody(message); err != nil || hash != hex.EncodeToString(sum[:]) {
			t.Fatalf("HashBody = %q, %v", hash, err)
		}
		if len(paths) == 0 {
			return // HashJSONFields panics without fields by design
		}
		hashFunc := idempotency.HashJSONFields(paths...)
		hash, err := hashFunc(message)
		if again, againErr := hashFunc(message); again != hash || (err == nil) != (againErr == nil) {
			t.Fatalf("not deterministic: %q/%v then %q/%v", hash, err, again, againErr)
		}
		backward := slices.Clone(paths)
		slices.Reverse(backward)
		reversed, rerr := idempotency.HashJSONFields(backward...)(message)
		if reversed != hash || (rerr == nil) != (err == nil) {
			t.Fatalf("field order changes the hash: %q vs %q", reversed, hash)
		}
		if err != nil {
			return
		}
		if _, decodeErr := hex.DecodeString(hash); len(hash) != 64 || decodeErr != nil {
			t.Fatalf("hash %q is not 64 hex characters", hash)
		}
		if !json.Valid([]byte(body)) {
			return // see FuzzJSONBodyStrictness
		}
		reordered, ok := reorder(body)
		if !ok {
			return
		}
		got, err := hashFunc(&sqsworker.Message{Body: reordered})
		if err != nil || got != hash {
			t.Fatalf("reordered body %q hashes to %q, %v; %q hashes to %q", reordered, got, err, body, hash)
		}
	})
}

// FuzzJSONBodyStrictness checks that key extraction and field hashing reject every body
// that is not exactly one JSON document (encoding/json's Valid), trailing data included.
func FuzzJSONBodyStrictness(f *testing.F) {
	f.Add("id", `{"id":"a"}`)
	f.Add("id", `{"id":"a"} {"id":"b"}`)
	f.Add("id", `{"id":"a"} x`)
	f.Add("id", `{"id":"a"`)
	f.Fuzz(func(t *testing.T, path, body string) {
		if path == "" || json.Valid([]byte(body)) {
			return
		}
		message := &sqsworker.Message{Body: body}
		if key, err := idempotency.KeyFromJSONField(path)(message); err == nil {
			t.Fatalf("KeyFromJSONField(%q) = %q from a body that is not one JSON document: %q", path, key, body)
		}
		if hash, err := idempotency.HashJSONFields(path)(message); err == nil {
			t.Fatalf("HashJSONFields(%q) = %q for a body that is not one JSON document: %q", path, hash, body)
		}
	})
}

// reorder re-encodes a JSON document with every object's keys in reverse sorted order
// and different whitespace, keeping numbers as written.
func reorder(body string) (string, bool) {
	decoder := json.NewDecoder(strings.NewReader(body))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return "", false
	}
	var out strings.Builder
	if !encodeReversed(&out, value) {
		return "", false
	}
	return "\n " + out.String() + "\t", true
}

func encodeReversed(out *strings.Builder, value any) bool {
	switch value := value.(type) {
	case map[string]any:
		keys := make([]string, 0, len(value))
		for key := range value {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		slices.Reverse(keys)
		out.WriteString("{ ")
		for i, key := range keys {
			if i > 0 {
				out.WriteString(" ,\n")
			}
			encoded, err := json.Marshal(key)
			if err != nil {
				return false
			}
			out.Write(encoded)
			out.WriteString(" : ")
			if !encodeReversed(out, value[key]) {
				return false
			}
		}
		out.WriteString(" }")
	case []any:
		out.WriteString("[ ")
		for i, element := range value {
			if i > 0 {
				out.WriteString(" , ")
			}
			if !encodeReversed(out, element) {
				return false
			}
		}
		out.WriteString(" ]")
	case json.Number:
		out.WriteString(value.String())
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return false
		}
		out.Write(encoded)
	}
	return true
}
