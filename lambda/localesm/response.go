package localesm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrFunction marks a whole-batch failure caused by a function error (or an invocation
// that did not complete); ErrMalformedResponse one caused by a response that breaks the
// partial batch response rules.
var (
	ErrFunction          = errors.New("localesm: function error")
	ErrMalformedResponse = errors.New("localesm: malformed partial batch response")
)

const (
	keyBatchItemFailures = "batchItemFailures"
	keyItemIdentifier    = "itemIdentifier"
)

// decide applies AWS's rules to one invocation's result: it returns the ids of the
// records to leave in the queue, or an error (wrapping ErrFunction or
// ErrMalformedResponse) when the whole batch failed. ids are the batch's message ids.
func decide(statusCode int, header http.Header, body []byte, ids map[string]bool, reportBatchItemFailures bool) (failed []string, err error) {
	if kind := header.Get("X-Amz-Function-Error"); kind != "" {
		return nil, fmt.Errorf("%w (%s): %s", ErrFunction, kind, abbreviate(body))
	}
	if statusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: invoke returned HTTP %d: %s", ErrFunction, statusCode, abbreviate(body))
	}
	if functionError(body) {
		// The RIE reports function errors in the body only, without the header.
		return nil, fmt.Errorf("%w: %s", ErrFunction, abbreviate(body))
	}
	if bytes.HasPrefix(body, []byte("Task timed out after")) {
		return nil, fmt.Errorf("%w: %s", ErrFunction, abbreviate(body))
	}
	if !reportBatchItemFailures {
		return nil, nil // the body is ignored: the whole batch succeeded
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	var response map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &response); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %s", ErrMalformedResponse, abbreviate(body))
	}
	for key := range response {
		if key != keyBatchItemFailures && strings.EqualFold(key, keyBatchItemFailures) {
			return nil, fmt.Errorf("%w: key %q must be spelt %q", ErrMalformedResponse, key, keyBatchItemFailures)
		}
	}
	list, ok := response[keyBatchItemFailures]
	if !ok || string(list) == "null" {
		return nil, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		return nil, fmt.Errorf("%w: batchItemFailures is not a list of objects: %s", ErrMalformedResponse, abbreviate(list))
	}
	seen := make(map[string]bool, len(items))
	for _, item := range items {
		for key := range item {
			if key != keyItemIdentifier && strings.EqualFold(key, keyItemIdentifier) {
				return nil, fmt.Errorf("%w: key %q must be spelt %q", ErrMalformedResponse, key, keyItemIdentifier)
			}
		}
		raw, ok := item[keyItemIdentifier]
		if !ok || string(raw) == "null" {
			return nil, fmt.Errorf("%w: missing or null itemIdentifier", ErrMalformedResponse)
		}
		var id string
		if err := json.Unmarshal(raw, &id); err != nil {
			return nil, fmt.Errorf("%w: itemIdentifier %s is not a string", ErrMalformedResponse, raw)
		}
		if id == "" {
			return nil, fmt.Errorf("%w: empty itemIdentifier", ErrMalformedResponse)
		}
		if !ids[id] {
			return nil, fmt.Errorf("%w: itemIdentifier %q is not in the batch", ErrMalformedResponse, id)
		}
		if !seen[id] {
			seen[id] = true
			failed = append(failed, id)
		}
	}
	return failed, nil
}

// functionError reports whether body is the runtime's error document
// ({"errorMessage": ..., "errorType": ...}).
func functionError(body []byte) bool {
	var document map[string]json.RawMessage
	if json.Unmarshal(body, &document) != nil {
		return false
	}
	_, hasType := document["errorType"]
	_, hasMessage := document["errorMessage"]
	return hasType || hasMessage
}

func abbreviate(body []byte) string {
	const limit = 300
	text := strings.TrimSpace(string(body))
	if len(text) > limit {
		return text[:limit] + "..."
	}
	return text
}
