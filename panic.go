package sqsworker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
)

// PanicError is the error a host reports when a handler panics. The panic fails that one
// message like any other error (it is retried with backoff); the process keeps running.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Location is "file:line" of the panic site, when it could be found.
	Location string
	// Stack is the goroutine stack at the recovery point.
	Stack []byte
}

// Error returns "handler panicked at Location: Value".
func (e *PanicError) Error() string {
	if e.Location == "" {
		return fmt.Sprintf("handler panicked: %v", e.Value)
	}
	return fmt.Sprintf("handler panicked at %s: %v", e.Location, e.Value)
}

// IsPanicError reports whether err is, or wraps, a [*PanicError].
func IsPanicError(err error) bool {
	_, ok := errors.AsType[*PanicError](err)
	return ok
}

// CallHandler runs handler on message and turns a panic into a [*PanicError]. Both hosts
// call handlers through it, so a panic fails one message and never the process.
func CallHandler(ctx context.Context, handler Handler, message *Message) (err error) {
	defer func() {
		if value := recover(); value != nil {
			err = &PanicError{Value: value, Location: panicLocation(), Stack: debug.Stack()}
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
		} else if afterPanic && !isRuntimeFrame(frame.Function) {
			return fmt.Sprintf("%s:%d", frame.File, frame.Line)
		}
		if !more {
			return ""
		}
	}
}

func isRuntimeFrame(function string) bool {
	return len(function) > 8 && function[:8] == "runtime."
}
