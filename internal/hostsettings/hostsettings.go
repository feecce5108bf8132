// Package hostsettings declares, defaults and validates the settings both hosts take
// (the poller's Config and the Lambda adapter's options): their concurrency, their retry
// policy, their logger. Each host names a setting its own way (poller.Config.Concurrency,
// lambda.WithConcurrency) and prefixes the problems found here with its own name, so the
// same bad setting reads the same on both hosts. [Environment] is how each host reads
// its own variables (poller.ConfigFromEnvironment, lambda.OptionsFromEnvironment) and
// package worker the shared ones.
package hostsettings

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/syncrand"
)

// DefaultConcurrency is how many messages (poller) or records or FIFO groups (Lambda) a
// host handles at once when its concurrency is not set: ten, the largest batch one SQS
// receive hands out.
const DefaultConcurrency = 10

// Concurrency reports the problem of n as a host's concurrency, or nil.
func Concurrency(n int) error {
	if n < 1 {
		return fmt.Errorf("Concurrency %d is below 1", n)
	}
	return nil
}

// Backoff returns backoff's problems (see sqsworker.Backoff.Validate), one error each.
func Backoff(backoff sqsworker.Backoff) []error {
	return Split(backoff.Validate())
}

// Split returns the errors joined in err (errors.Join), or err alone, or none for nil.
func Split(err error) []error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

// Prefixed returns problems joined into one error, each line starting with prefix
// (a host's "poller: Config." or "lambda: "), or nil for none.
func Prefixed(prefix string, problems ...error) error {
	prefixed := make([]error, len(problems))
	for i, problem := range problems {
		prefixed[i] = fmt.Errorf("%s%w", prefix, problem)
	}
	return errors.Join(prefixed...)
}

// ForConcurrentUse returns backoff ready for the calls of concurrent messages: its Random
// serialised, so a seeded *rand.Rand's Float64 is safe.
func ForConcurrentUse(backoff sqsworker.Backoff) sqsworker.Backoff {
	backoff.Random = syncrand.Serialize(backoff.Random)
	return backoff
}

// Logger returns logger, or slog.Default() when nil: the poller's default. (The Lambda
// adapter's is the function's logging configuration, lambda.LoggerFromEnvironment.)
func Logger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.Default()
	}
	return logger
}

// FillBackoff returns backoff with its unset parts taken from defaults: all of defaults
// when backoff is the zero value (no Jitter or Random of its own either), else only its
// zero Base and Cap. It is how a setting made in code meets a shared default (the
// worker's Settings, the environment).
func FillBackoff(backoff, defaults sqsworker.Backoff) sqsworker.Backoff {
	if backoff.Base == 0 && backoff.Cap == 0 && backoff.Jitter == sqsworker.JitterFull && backoff.Random == nil {
		return defaults
	}
	if backoff.Base == 0 {
		backoff.Base = defaults.Base
	}
	if backoff.Cap == 0 {
		backoff.Cap = defaults.Cap
	}
	return backoff
}
