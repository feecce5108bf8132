package delivery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// requestFields are the fields of a delivery message, as [Request] names them.
var requestFields = []string{KeyField, "url", "payload"}

// checkFields refuses a body that two readers could read differently: an object (at any
// depth) with a name twice, whose last value encoding/json takes while another reader
// may take the first, and a top-level name that differs from a Request field only in
// case ("URL", "Url"), which encoding/json matches to the field while the idempotency
// middleware's payload hash (idempotency.HashJSONFields("url", "payload")) reads the
// exact name. So the URL and payload the hash covers are the ones posted.
func checkFields(body string) error {
	type frame struct {
		object  bool
		wantKey bool
		names   map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	decoder := json.NewDecoder(strings.NewReader(body))
	decoder.UseNumber()
	for {
		token, err := decoder.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if token == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			name, _ := token.(string)
			if top.names[name] {
				return fmt.Errorf("the name %q appears twice in one object", name)
			}
			top.names[name] = true
			if n == 1 {
				for _, field := range requestFields {
					if name != field && strings.EqualFold(name, field) {
						return fmt.Errorf("the name %q differs from the field %q only in case", name, field)
					}
				}
			}
			top.wantKey = false
			continue
		}
		switch token {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, names: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
