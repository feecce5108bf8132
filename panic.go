package sqsworker

import (
	"errors"
	"fmt"
)

// PanicError is the error a host reports when a handler panics (both hosts call
// handlers through one recover wrapper). The panic fails that one
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
