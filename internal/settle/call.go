package settle

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/sqsworker/sqsworker"
)

// Call runs handler on message and turns a panic into a [*sqsworker.PanicError] with the
// panic's file and line. Both hosts call handlers through it, so a panic fails one
// message and never the process.
func Call(ctx context.Context, handler sqsworker.Handler, message *sqsworker.Message) (err error) {
	defer func() {
		if value := recover(); value != nil {
			err = &sqsworker.PanicError{Value: value, Location: panicLocation(), Stack: debug.Stack()}
		}
	}()
	return handler.Handle(ctx, message)
}

// panicLocation finds the first frame below the runtime's panic machinery.
func panicLocation() string {
	programCounters := make([]uintptr, 32)
	count := runtime.Callers(3, programCounters)
	frames := runtime.CallersFrames(programCounters[:count])
	afterPanic := false
	for {
		frame, more := frames.Next()
		if frame.Function == "runtime.gopanic" {
			afterPanic = true
		} else if afterPanic && !strings.HasPrefix(frame.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", frame.File, frame.Line)
		}
		if !more {
			return ""
		}
	}
}
