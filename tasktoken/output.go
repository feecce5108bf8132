package tasktoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sqsworker/sqsworker"
)

// Step Functions' limits on what a task reports (AWS Step Functions Developer Guide,
// "Step Functions service quotas": 256 KiB for a task's input or output as a UTF-8
// string; API reference, SendTaskFailure: error up to 256 characters, cause up to 32,768).
const (
	// MaxOutputBytes is the largest output SendTaskSuccess takes: 256 KiB.
	MaxOutputBytes = 256 * 1024
	// MaxErrorLength and MaxCauseLength bound SendTaskFailure's error name and cause;
	// longer ones are cut (at a character boundary).
	MaxErrorLength = 256
	MaxCauseLength = 32768
)

// The error names the middleware reports with SendTaskFailure besides a permanent
// failure's reason. A state machine catches them by name (ErrorEquals) or with
// States.TaskFailed / States.ALL.
const (
	// ErrorRetriesExhausted: the job failed on its last attempt (the queue's
	// maxReceiveCount); the cause is the last error.
	ErrorRetriesExhausted = "sqsworker.RetriesExhausted"
	// ErrorOutputTooLarge: the handler succeeded, but its output is above MaxOutputBytes.
	ErrorOutputTooLarge = "sqsworker.OutputTooLarge"
)

// ErrTaskClosed is the cause of a handler's context cancelled because Step Functions
// answered a heartbeat with TaskTimedOut, TaskDoesNotExist or InvalidToken (the task
// timed out, its execution ended, or it was answered elsewhere). Read it with
// context.Cause.
var ErrTaskClosed = errors.New("tasktoken: the task is closed (timed out, answered, or its execution ended)")

// outputKey is the context key of a job's *output.
type outputKey struct{}

// output is what a handler set with SetOutput.
type output struct {
	mu   sync.Mutex
	json []byte
}

// SetOutput sets the output the job reports with SendTaskSuccess when its handler
// succeeds: v marshalled to JSON (a json.RawMessage is taken as is, and must be valid
// JSON). The last call wins. It fails when ctx is not a task-token job's (not inside the
// middleware of [New]), when v does not marshal, and, with a [sqsworker.PermanentError]
// of reason [ErrorOutputTooLarge], when the JSON is above [MaxOutputBytes]; a handler
// that returns nil all the same has the task failed with that error name.
func SetOutput(ctx context.Context, v any) error {
	holder, ok := ctx.Value(outputKey{}).(*output)
	if !ok {
		return errors.New("tasktoken: SetOutput outside a task-token job (wrap the handler with tasktoken.New's middleware)")
	}
	encoded, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("tasktoken: encoding the output: %w", err)
	}
	holder.mu.Lock()
	holder.json = encoded
	holder.mu.Unlock()
	return checkOutput(encoded)
}

// checkOutput refuses output above MaxOutputBytes.
func checkOutput(encoded []byte) error {
	if len(encoded) > MaxOutputBytes {
		return sqsworker.Permanent(ErrorOutputTooLarge, fmt.Errorf("the output is %d bytes; Step Functions takes at most %d (256 KiB) from SendTaskSuccess", len(encoded), MaxOutputBytes))
	}
	return nil
}

// result returns the JSON to send: what SetOutput set, or "{}".
func (o *output) result() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.json == nil {
		return []byte("{}")
	}
	return o.json
}

// truncate cuts s to at most n bytes, at a UTF-8 character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
