package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/opspage/humantime"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "success", err: nil, want: exitOK},
		{name: "error", err: errors.New("sqsworker: boom"), want: exitError},
		{name: "usage", err: usageError(errors.New("bad")), want: exitUsage},
		{name: "wrapped usage", err: fmt.Errorf("x: %w", usageError(errors.New("bad"))), want: exitUsage},
		{name: "partial", err: partial(), want: exitPartial},
		{name: "cobra unknown command", err: errors.New(`unknown command "x" for "sqsworker"`), want: exitUsage},
		{name: "cobra required flag", err: errors.New(`required flag(s) "table" not set`), want: exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Fatalf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{90 * time.Second, "1m30s"},
		{24 * time.Hour, "1d0h"},
		{4*24*time.Hour - time.Second, "4d0h"},
		{14*24*time.Hour + 5*time.Hour, "14d5h"},
	}
	for _, tc := range tests {
		if got := humantime.Short(tc.d); got != tc.want {
			t.Errorf("humantime.Short(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := plural(1, "batch") + ", " + plural(2, "batch") + ", " + plural(0, "message"); got != "1 batch, 2 batches, 0 messages" {
		t.Errorf("plural: %q", got)
	}
}
