package sqsworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// JSONHandler returns a [Handler] that decodes each body strictly into a T and calls
// handle with it. A body that does not decode strictly (a field T does not have, a
// value of the wrong type, more than one JSON value, trailing data, an empty body or
// JSON null) fails permanently with reason "MalformedBody" and the decoder's message:
// retrying cannot fix it, so the host sends it to the dead-letter queue at once.
func JSONHandler[T any](handle func(ctx context.Context, job T) error) Handler {
	return &jsonHandler[T]{handle: handle}
}

// RegisterJSON registers [JSONHandler](handle) for jobType on mux, with the per-type
// options (see [ServeMux.Register]). On a mux that routes by a JSON field
// ([RouteByJSONField]), a body that carries that field also decodes into a T without it.
func RegisterJSON[T any](mux *ServeMux, jobType string, handle func(ctx context.Context, job T) error, options ...JobOption) {
	mux.Register(jobType, &jsonHandler[T]{handle: handle, routingField: mux.typeField}, options...)
}

type jsonHandler[T any] struct {
	handle       func(ctx context.Context, job T) error
	routingField string
}

// Handle decodes the body and calls the function.
func (h *jsonHandler[T]) Handle(ctx context.Context, message *Message) error {
	job, err := decodeStrict[T]([]byte(message.Body))
	if err != nil && h.routingField != "" {
		if body, ok := withoutField([]byte(message.Body), h.routingField); ok {
			job, err = decodeStrict[T](body)
		}
	}
	if err != nil {
		return Permanent("MalformedBody", err)
	}
	return h.handle(ctx, job)
}

// decodeStrict decodes exactly one JSON value into a T, refusing unknown fields.
func decodeStrict[T any](body []byte) (T, error) {
	var job T
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return job, errors.New("empty body, want a JSON value")
	}
	if string(trimmed) == "null" {
		return job, errors.New("body is JSON null")
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&job); err != nil {
		return job, fmt.Errorf("decoding %T: %w", job, err)
	}
	// More reports false at a closing bracket, so ask for the next token instead: only
	// the end of the input may follow the value.
	if _, err := decoder.Token(); err != io.EOF {
		return job, fmt.Errorf("decoding %T: trailing data after the JSON value", job)
	}
	return job, nil
}

// withoutField returns a JSON object body with its top-level field name removed, and
// false when body is not an object with that field.
func withoutField(body []byte, name string) ([]byte, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, false
	}
	if _, ok := fields[name]; !ok {
		return nil, false
	}
	delete(fields, name)
	stripped, err := json.Marshal(fields)
	if err != nil {
		return nil, false
	}
	return stripped, strings.TrimSpace(string(stripped)) != ""
}
