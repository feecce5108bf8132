package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sqsworker/sqsworker"
)

// KeyFromMessageID is a [KeyFunc]: the SQS message id (the default's fallback, see
// [KeyFromProducer]). It suppresses
// redeliveries of one message, not separate sends of the same payload; use
// [KeyFromJSONField] or [KeyFromMessageAttribute] for a business key.
func KeyFromMessageID(message *sqsworker.Message) (string, error) {
	if message.ID == "" {
		return "", fmt.Errorf("%w: message has no id", ErrKeyMissing)
	}
	return message.ID, nil
}

// KeyFromJSONField returns a [KeyFunc] that reads the key from the JSON body at path:
// field names separated by dots ("order.id"), with decimal indexes for arrays
// ("items.0.sku"). A string value is the key as it is; a number is its literal text;
// true, false, objects and arrays are their compact JSON (object keys sorted). A body
// that is not JSON, or a path that is missing, null or "", gives an error matching
// [ErrKeyMissing].
func KeyFromJSONField(path string) KeyFunc {
	if path == "" {
		panic("idempotency: KeyFromJSONField with an empty path")
	}
	return func(message *sqsworker.Message) (string, error) {
		body, err := decodeJSON(message.Body)
		if err != nil {
			return "", fmt.Errorf("%w: body is not JSON: %v", ErrKeyMissing, err)
		}
		value, ok := lookup(body, path)
		if !ok || value == nil {
			return "", fmt.Errorf("%w: no JSON field %q", ErrKeyMissing, path)
		}
		var key string
		switch value := value.(type) {
		case string:
			key = value
		case json.Number:
			key = value.String()
		default:
			encoded, err := json.Marshal(value)
			if err != nil {
				return "", fmt.Errorf("idempotency: encoding JSON field %q: %w", path, err)
			}
			key = string(encoded)
		}
		if key == "" {
			return "", fmt.Errorf("%w: JSON field %q is empty", ErrKeyMissing, path)
		}
		return key, nil
	}
}

// KeyFromMessageAttribute returns a [KeyFunc] that reads the key from the message
// attribute name: its string value, or for Binary attributes the hex encoding of its
// bytes. A missing or empty attribute gives an error matching [ErrKeyMissing].
func KeyFromMessageAttribute(name string) KeyFunc {
	if name == "" {
		panic("idempotency: KeyFromMessageAttribute with an empty name")
	}
	return func(message *sqsworker.Message) (string, error) {
		attribute, ok := message.MessageAttributes[name]
		key := attribute.StringValue
		if key == "" && len(attribute.BinaryValue) > 0 {
			key = hex.EncodeToString(attribute.BinaryValue)
		}
		if !ok || key == "" {
			return "", fmt.Errorf("%w: no message attribute %q", ErrKeyMissing, name)
		}
		return key, nil
	}
}

// HashBody is the default [PayloadHashFunc]: the hex SHA-256 of the whole body.
func HashBody(message *sqsworker.Message) (string, error) {
	sum := sha256.Sum256([]byte(message.Body))
	return hex.EncodeToString(sum[:]), nil
}

// HashJSONFields returns a [PayloadHashFunc] that validates only the given fields of a
// JSON body (paths as in [KeyFromJSONField]): the hex SHA-256 of the canonical JSON of
// the sorted [path, value] pairs, a missing field counting as null. Objects compare
// regardless of key order; numbers compare by their literal text (100 and 100.0
// differ). A body that is not JSON is an error.
func HashJSONFields(paths ...string) PayloadHashFunc {
	if len(paths) == 0 {
		panic("idempotency: HashJSONFields without fields")
	}
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return func(message *sqsworker.Message) (string, error) {
		body, err := decodeJSON(message.Body)
		if err != nil {
			return "", fmt.Errorf("idempotency: body is not JSON: %w", err)
		}
		pairs := make([][2]any, 0, len(sorted))
		for _, path := range sorted {
			value, _ := lookup(body, path)
			pairs = append(pairs, [2]any{path, value})
		}
		canonical, err := json.Marshal(pairs)
		if err != nil {
			return "", fmt.Errorf("idempotency: encoding validated fields: %w", err)
		}
		sum := sha256.Sum256(canonical)
		return hex.EncodeToString(sum[:]), nil
	}
}

// decodeJSON decodes a whole JSON document, keeping numbers as written.
func decodeJSON(body string) (any, error) {
	decoder := json.NewDecoder(strings.NewReader(body))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	// More reports false at a closing bracket too, so ask for the next token: only the
	// end of the input may follow the value.
	if _, err := decoder.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return value, nil
}

// lookup follows a dotted path through decoded JSON.
func lookup(value any, path string) (any, bool) {
	for segment := range strings.SplitSeq(path, ".") {
		switch current := value.(type) {
		case map[string]any:
			next, ok := current[segment]
			if !ok {
				return nil, false
			}
			value = next
		case []any:
			index, err := strconv.Atoi(segment)
			if err != nil || index < 0 || index >= len(current) {
				return nil, false
			}
			value = current[index]
		default:
			return nil, false
		}
	}
	return value, true
}

// storedKey applies the length limit and the prefix to a key.
func storedKey(prefix, key string) string {
	if len(key) > maxKeyLength {
		sum := sha256.Sum256([]byte(key))
		key = "sha256:" + hex.EncodeToString(sum[:])
	}
	if prefix != "" {
		key = prefix + "#" + key
	}
	return key
}
