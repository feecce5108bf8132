package redrive_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/redrive"
)

// FuzzParseFilter parses arbitrary filter expressions and evaluates them on arbitrary
// messages. It never panics; a parsed filter is deterministic; "!EXPR" parses exactly
// when EXPR does and matches exactly the messages EXPR does not; attr:NAME=VALUE and
// json:KEY=VALUE match a message built to carry NAME=VALUE or {"KEY":"VALUE"}.
// Seeds are in testdata/fuzz/FuzzParseFilter.
func FuzzParseFilter(f *testing.F) {
	f.Add("reason:MalformedBody", `{"type":"order"}`, "failure-reason", "MalformedBody", "type", "order")
	f.Add("!json:payload.type=order", `{"payload":{"type":"order"}}`, "tenant", "acme", "payload", "x")
	f.Add("json:n=3", `{"n":3}`, "", "", "n", "3")
	f.Add("attr:=x", "", "a", "", "", "")
	f.Add("!!!", "[]", "a=b", "c", "a.b", "")
	f.Fuzz(func(t *testing.T, expression, body, attrName, attrValue, jsonKey, jsonValue string) {
		message := &sqsworker.Message{Body: body}
		if attrName != "" {
			message.MessageAttributes = map[string]sqsworker.MessageAttribute{
				attrName: {DataType: "String", StringValue: attrValue},
			}
		}
		filter, err := redrive.ParseFilter(expression)
		negated, negatedErr := redrive.ParseFilter("!" + expression)
		if (err == nil) != (negatedErr == nil) {
			t.Fatalf("ParseFilter(%q) err %v but ParseFilter(!%q) err %v", expression, err, expression, negatedErr)
		}
		if err == nil {
			matched := filter(message)
			if filter(message) != matched {
				t.Fatalf("filter %q is not deterministic", expression)
			}
			if negated(message) == matched {
				t.Fatalf("!%q matches %v, as %q does", expression, matched, expression)
			}
		} else if !strings.HasPrefix(err.Error(), "redrive: filter ") {
			t.Fatalf("error %q lacks the package prefix", err)
		}

		if attrName != "" && !strings.Contains(attrName, "=") {
			attr, err := redrive.ParseFilter("attr:" + attrName + "=" + attrValue)
			if err != nil {
				t.Fatalf("attr:%s=%s: %v", attrName, attrValue, err)
			}
			if !attr(message) {
				t.Fatalf("attr:%s=%s does not match its own attribute", attrName, attrValue)
			}
		}
		if jsonKey != "" && !strings.ContainsAny(jsonKey, ".=") {
			document, err := json.Marshal(map[string]string{jsonKey: jsonValue})
			if err != nil {
				t.Fatal(err)
			}
			var decoded map[string]string
			if err := json.Unmarshal(document, &decoded); err != nil {
				t.Fatal(err)
			}
			if value, ok := decoded[jsonKey]; !ok || value != jsonValue {
				return // not representable in JSON as is (invalid UTF-8)
			}
			field, err := redrive.ParseFilter("json:" + jsonKey + "=" + jsonValue)
			if err != nil {
				t.Fatalf("json:%s=%s: %v", jsonKey, jsonValue, err)
			}
			if !field(&sqsworker.Message{Body: string(document)}) {
				t.Fatalf("json:%s=%s does not match %s", jsonKey, jsonValue, document)
			}
		}
	})
}
