package tasktoken

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker"
)

// ReasonTokenMissing is the permanent failure of a message that carries no task token
// where Config.Token says: it cannot be answered, so it goes to the dead-letter queue.
const ReasonTokenMissing = "TaskTokenMissing"

// take returns the message's task token and the message the handler sees (for a body
// field, a copy whose body lacks the field).
func (t Token) take(message *sqsworker.Message) (string, *sqsworker.Message, error) {
	if t.attribute != "" {
		token, ok := message.StringAttribute(t.attribute)
		if !ok || token == "" {
			return "", nil, sqsworker.Permanent(ReasonTokenMissing, fmt.Errorf("the message has no %q attribute with a task token", t.attribute))
		}
		return token, message, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(message.Body), &fields); err != nil || fields == nil {
		return "", nil, sqsworker.Permanent(ReasonTokenMissing, errors.New("the body is not a JSON object, so it has no task token field"))
	}
	var token string
	if err := json.Unmarshal(fields[t.bodyField], &token); err != nil || token == "" {
		return "", nil, sqsworker.Permanent(ReasonTokenMissing, fmt.Errorf("the body has no string field %q with a task token", t.bodyField))
	}
	delete(fields, t.bodyField)
	body, err := json.Marshal(fields)
	if err != nil {
		return "", nil, fmt.Errorf("tasktoken: re-encoding the body: %w", err)
	}
	job := *message
	job.Body = string(body)
	return token, &job, nil
}
