package redrive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sqsworker/sqsworker"
)

// Filter selects the messages a [Mover] moves; it returns true for a message to move.
type Filter func(message *sqsworker.Message) bool

// AttributeEquals matches messages whose message attribute name has the string value
// value (String and Number attributes; Binary attributes never match).
func AttributeEquals(name, value string) Filter {
	return func(message *sqsworker.Message) bool {
		attribute, ok := message.MessageAttributes[name]
		return ok && attribute.BinaryValue == nil && attribute.StringValue == value
	}
}

// FailureReason matches messages whose failure-reason attribute
// ([sqsworker.AttributeFailureReason]) is reason.
func FailureReason(reason string) Filter {
	return AttributeEquals(sqsworker.AttributeFailureReason, reason)
}

// JSONFieldEquals matches messages whose body is a JSON object with the field at path
// (dot-separated keys, for example "payload.type") equal to value. A string field is
// compared by its text, any other field by its JSON text ("3", "true", "null").
// Bodies that are not JSON, and paths that do not exist, do not match.
func JSONFieldEquals(path, value string) Filter {
	keys := strings.Split(path, ".")
	return func(message *sqsworker.Message) bool {
		decoder := json.NewDecoder(strings.NewReader(message.Body))
		decoder.UseNumber()
		var document any
		if err := decoder.Decode(&document); err != nil {
			return false
		}
		for _, key := range keys {
			object, ok := document.(map[string]any)
			if !ok {
				return false
			}
			if document, ok = object[key]; !ok {
				return false
			}
		}
		switch field := document.(type) {
		case string:
			return field == value
		case json.Number:
			return field.String() == value
		default:
			text, err := json.Marshal(field)
			if err != nil {
				return false
			}
			return bytes.Equal(text, []byte(value))
		}
	}
}

// Not matches the messages filter does not match.
func Not(filter Filter) Filter {
	return func(message *sqsworker.Message) bool { return !filter(message) }
}

// All matches messages that every filter matches; with no filters it matches all.
func All(filters ...Filter) Filter {
	return func(message *sqsworker.Message) bool {
		for _, filter := range filters {
			if !filter(message) {
				return false
			}
		}
		return true
	}
}

// ParseFilter parses a filter expression as the CLI's --filter flag takes it:
//
//	attr:NAME=VALUE     message attribute NAME equals VALUE
//	reason:VALUE        failure-reason attribute equals VALUE (attr:failure-reason=VALUE)
//	json:PATH=VALUE     JSON body field PATH (dot-separated) equals VALUE
//	!EXPR               the messages EXPR does not match (for example !reason:MalformedBody)
//
// Errors name the expression and the accepted forms.
func ParseFilter(expression string) (Filter, error) {
	if inner, negated := strings.CutPrefix(expression, "!"); negated {
		filter, err := ParseFilter(inner)
		if err != nil {
			return nil, err
		}
		return Not(filter), nil
	}
	kind, rest, ok := strings.Cut(expression, ":")
	if !ok {
		return nil, fmt.Errorf("redrive: filter %q: want attr:NAME=VALUE, reason:VALUE or json:PATH=VALUE, optionally preceded by !", expression)
	}
	switch kind {
	case "reason":
		if rest == "" {
			return nil, fmt.Errorf("redrive: filter %q: empty reason", expression)
		}
		return FailureReason(rest), nil
	case "attr", "json":
		name, value, ok := strings.Cut(rest, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("redrive: filter %q: want %s:NAME=VALUE", expression, kind)
		}
		if kind == "attr" {
			return AttributeEquals(name, value), nil
		}
		for _, key := range strings.Split(name, ".") {
			if key == "" {
				return nil, fmt.Errorf("redrive: filter %q: empty key in path %q", expression, name)
			}
		}
		return JSONFieldEquals(name, value), nil
	}
	return nil, fmt.Errorf("redrive: filter %q: unknown kind %q (want attr, reason or json)", expression, kind)
}
