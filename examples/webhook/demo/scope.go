package main

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// scope is the testing.TB the Lambda host gives internal/testing/rie, a test harness, so the
// same code serves the demo's test and `go run ./examples/webhook/demo -host=lambda`,
// and so each execution environment can be stopped on its own: the functions rie
// registers with Cleanup run when the scope is closed, a Fatal becomes an error (see
// do), and logging goes to the demo's output.
//
// It implements the methods rie calls (and their kin); the embedded TB is nil, so any
// other method panics. testing.TB has an unexported method: embedding is the only way
// to implement it.
type scope struct {
	testing.TB

	name string
	logf func(format string, args ...any)

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// scopeFailure is the panic value of Fatal and FailNow, recovered by do.
type scopeFailure struct{ message string }

func newScope(name string, logf func(format string, args ...any)) *scope {
	return &scope{name: name, logf: logf}
}

// do calls f and returns the message of a Fatal or FailNow as an error. Cleanup
// functions registered before the failure stay registered: close the scope.
func (s *scope) do(f func()) (err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			failure, ok := recovered.(scopeFailure)
			if !ok {
				panic(recovered)
			}
			err = errors.New(failure.message)
		}
	}()
	f()
	return nil
}

// close runs the Cleanup functions, last registered first, once.
func (s *scope) close() {
	s.mu.Lock()
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for _, cleanup := range slices.Backward(cleanups) {
		cleanup()
	}
}

func (s *scope) Name() string { return s.name }
func (s *scope) Helper()      {}

func (s *scope) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *scope) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

func (s *scope) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *scope) FailNow() {
	s.Fail()
	panic(scopeFailure{s.name + ": failed"})
}

func (s *scope) Log(args ...any) { s.logf("%s: %s", s.name, fmt.Sprint(args...)) }
func (s *scope) Logf(format string, args ...any) {
	s.logf("%s: %s", s.name, fmt.Sprintf(format, args...))
}
func (s *scope) Error(args ...any) { s.Log(args...); s.Fail() }
func (s *scope) Errorf(format string, args ...any) {
	s.Logf(format, args...)
	s.Fail()
}

func (s *scope) Fatal(args ...any) {
	s.Fail()
	panic(scopeFailure{fmt.Sprint(args...)})
}

func (s *scope) Fatalf(format string, args ...any) {
	s.Fail()
	panic(scopeFailure{fmt.Sprintf(format, args...)})
}
