package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/table"
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
		key, ok, err := fieldKey(body, path)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%w: expression body.%s selected no value", ErrKeyMissing, path)
		}
		return key, nil
	}
}

// fieldKey renders the value at path as KeyFromJSONField does; ok is false when the
// path is missing, null or "".
func fieldKey(body any, path string) (key string, ok bool, err error) {
	value, found := lookup(body, path)
	if !found || value == nil {
		return "", false, nil
	}
	switch value := value.(type) {
	case string:
		key = value
	case json.Number:
		key = value.String()
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return "", false, fmt.Errorf("idempotency: encoding JSON field %q: %w", path, err)
		}
		key = string(encoded)
	}
	return key, key != "", nil
}

// KeyFromJSONFields returns a [KeyFunc] for a composite key: the values at paths (as in
// [KeyFromJSONField]), as a compact JSON array of strings in the order given, with null
// for a path that is missing, null or "" (an explicit marker: a partial key never equals
// a key whose part is present, whatever its text). For example paths "tenant" and
// "orderId" give ["T1","O-2"] or ["T1",null]. When every path selects nothing, the error
// matches [ErrKeyMissing] and names the composite expression. A body that is not JSON
// is an error matching ErrKeyMissing.
func KeyFromJSONFields(paths ...string) KeyFunc {
	if len(paths) == 0 || slices.Contains(paths, "") {
		panic("idempotency: KeyFromJSONFields without paths, or with an empty one")
	}
	expression := "[body." + strings.Join(paths, ", body.") + "]"
	return func(message *sqsworker.Message) (string, error) {
		body, err := decodeJSON(message.Body)
		if err != nil {
			return "", fmt.Errorf("%w: body is not JSON: %v", ErrKeyMissing, err)
		}
		parts := make([]*string, len(paths))
		present := 0
		for i, path := range paths {
			key, ok, err := fieldKey(body, path)
			if err != nil {
				return "", err
			}
			if ok {
				parts[i] = &key
				present++
			}
		}
		if present == 0 {
			return "", fmt.Errorf("%w: expression %s selected no value", ErrKeyMissing, expression)
		}
		encoded, err := json.Marshal(parts)
		if err != nil {
			return "", fmt.Errorf("idempotency: encoding the composite key %s: %w", expression, err)
		}
		return string(encoded), nil
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

// Limits of stored keys.
const (
	// MaxStoredKeyBytes is DynamoDB's limit on a partition key value: 2048 bytes of
	// UTF-8 ("Constraints in Amazon DynamoDB", Partition keys and sort keys).
	MaxStoredKeyBytes = table.MaxKeyBytes
	// MaxKeyBytes is the longest key stored as it is (prefix not counted), when the
	// prefix leaves room for it; longer keys are stored as their digest.
	MaxKeyBytes = 1024
	// MaxKeyPrefixBytes is the longest Config.KeyPrefix: the namespace, the prefix, the
	// separators and a digest ("sha256:" and 64 hex digits) must fit in
	// MaxStoredKeyBytes.
	MaxKeyPrefixBytes = MaxStoredKeyBytes - idempotencyKeyOverhead - len(digestMarker) - 64
)

// idempotencyKeyOverhead is what the table's idempotency layout adds to prefix and key:
// "idempotency#" and the "#" after the prefix.
const idempotencyKeyOverhead = len(table.Idempotency) + 2*len(table.Separator)

// digestMarker starts every digested key, and no key stored as it is.
const digestMarker = "sha256:"

// ErrInvalidKeyPrefix matches the error [StoredKey] and [Config.Validate] return for a
// KeyPrefix that is longer than MaxKeyPrefixBytes, contains "#" or is not valid UTF-8.
var ErrInvalidKeyPrefix = errors.New("idempotency: invalid key prefix")

// StoredKey returns the partition key under which the middleware stores key with
// Config.KeyPrefix prefix. Every record lives in the table's idempotency namespace
// (package github.com/sqsworker/sqsworker/table): "idempotency#" + prefix + "#" + key,
// "idempotency##" + key without a prefix. So no key a sender chooses can name another
// subsystem's item: "unique#order-42" is stored as "idempotency##unique#order-42", not
// as the unique job's item. Key is replaced by "sha256:" + the hex SHA-256 of its bytes
// when it
//
//   - is longer than MaxKeyBytes, or would make the whole stored key longer than
//     MaxStoredKeyBytes (DynamoDB's 2048-byte partition key limit);
//   - is not valid UTF-8 (DynamoDB strings are UTF-8: the SDK would send every invalid
//     byte as U+FFFD, so "k\xff" and "k\xfe" would share a record); or
//   - itself starts with "sha256:" (so it can never land on a digested key's record).
//
// Distinct (prefix, key) pairs therefore get distinct stored keys (up to SHA-256
// collisions). The middleware and `sqsworker idempotency get/delete` both use it. It
// returns an error matching [ErrKeyMissing] for an empty key and [ErrInvalidKeyPrefix]
// for an invalid prefix.
//
// Versions before the table namespace stored prefix + "#" + key (just key without a
// prefix); records written by them are not found under the new keys, so a duplicate of
// a message completed before an upgrade can run once more.
func StoredKey(prefix, key string) (string, error) {
	if err := validatePrefix(prefix); err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("%w: empty key", ErrKeyMissing)
	}
	if len(key) > MaxKeyBytes || idempotencyKeyOverhead+len(prefix)+len(key) > MaxStoredKeyBytes || !utf8.ValidString(key) ||
		strings.HasPrefix(key, digestMarker) {
		sum := sha256.Sum256([]byte(key))
		key = digestMarker + hex.EncodeToString(sum[:])
	}
	stored, err := table.IdempotencyKey(prefix, key)
	if err != nil { // the prefix and the key were checked above
		return "", fmt.Errorf("idempotency: %w", err)
	}
	return stored, nil
}

func validatePrefix(prefix string) error {
	if len(prefix) > MaxKeyPrefixBytes {
		return fmt.Errorf("%w: %d bytes, at most %d fit with a digested key in DynamoDB's %d-byte partition key",
			ErrInvalidKeyPrefix, len(prefix), MaxKeyPrefixBytes, MaxStoredKeyBytes)
	}
	if !utf8.ValidString(prefix) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidKeyPrefix)
	}
	if strings.Contains(prefix, table.Separator) {
		return fmt.Errorf("%w: %q contains %q, which separates the prefix from the key", ErrInvalidKeyPrefix, prefix, table.Separator)
	}
	return nil
}
