package hostsettings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment reads settings from a process environment the one way every host does:
// values trimmed, durations as Go durations ("15s", "2m"), booleans as strconv.ParseBool
// reads them, every malformed value kept as a problem naming its variable, so a host
// reports them all at once ([Environment.Err]). A host reads only its own variables.
type Environment struct {
	prefix   string
	getenv   func(string) string
	problems []error
}

// NewEnvironment returns a reader of getenv (os.Getenv in a program) whose problems start
// with prefix (a host's "poller: " or "lambda: ").
func NewEnvironment(prefix string, getenv func(string) string) *Environment {
	return &Environment{prefix: prefix, getenv: getenv}
}

// Value returns the variable's value, trimmed; "" when unset.
func (e *Environment) Value(name string) string { return strings.TrimSpace(e.getenv(name)) }

// Problem records a problem; format and args describe it after the host's prefix.
func (e *Environment) Problem(format string, args ...any) {
	e.problems = append(e.problems, fmt.Errorf(e.prefix+format, args...))
}

// Duration returns the variable as a duration of 0 or more, and whether it is set and
// well formed.
func (e *Environment) Duration(name string) (time.Duration, bool) {
	text := e.Value(name)
	if text == "" {
		return 0, false
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		e.Problem("%s=%q is not a duration such as 2s or 5m", name, text)
		return 0, false
	}
	return d, true
}

// Bool returns the variable as a boolean, and whether it is set and well formed.
func (e *Environment) Bool(name string) (value, ok bool) {
	text := e.Value(name)
	if text == "" {
		return false, false
	}
	b, err := strconv.ParseBool(text)
	if err != nil {
		e.Problem("%s=%q is not true or false", name, text)
		return false, false
	}
	return b, true
}

// Int returns the variable as a whole number of least or more, and whether it is set and
// well formed.
func (e *Environment) Int(name string, least int) (int, bool) {
	text := e.Value(name)
	if text == "" {
		return 0, false
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < least {
		if least == 1 {
			e.Problem("%s=%q is not a positive whole number", name, text)
		} else {
			e.Problem("%s=%q is not a whole number of %d or more", name, text, least)
		}
		return 0, false
	}
	return n, true
}

// Err returns every problem recorded so far, joined, or nil.
func (e *Environment) Err() error { return errors.Join(e.problems...) }
