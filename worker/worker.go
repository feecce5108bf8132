// Package worker runs one [sqsworker.Handler] on whichever host it finds itself: the
// AWS Lambda runtime (package lambda, behind an SQS event source mapping) when
// AWS_LAMBDA_RUNTIME_API is set, the long-poll worker (package poller) otherwise. One
// binary serves both: built as a provided.al2023 "bootstrap" it is a Lambda function,
// run in a container it is an ECS worker.
//
//	func main() {
//		handler := sqsworker.HandlerFunc(deliver)
//		if err := worker.Run(context.Background(), handler, worker.Options{}); err != nil {
//			log.Fatal(err) // configuration problems, each naming its variable
//		}
//	}
//
// Run takes its hosts through one small interface, [Host] (Name, Detect, Run), and gives
// each the same [Settings] (concurrency, backoff, logger, observer, error handler,
// dead-letter send, SQS client), filled from the environment by one reader. The default
// hosts are [LambdaHost] and [PollerHost], in that order: a third host is one more value
// in Options.Hosts, a shared setting one more field of Settings.
//
// Run lives in this package, not in package sqsworker, because poller and lambda import
// sqsworker: sqsworker importing them back would be an import cycle.
//
// # Environment
//
// Options fields set in code win; the environment fills the rest. Run reads the shared
// variables below for every host, and then only the variables of the host it runs:
// [poller.ConfigFromEnvironment] (SQSWORKER_QUEUE_URL, _QUEUE_NAME, _QUEUES, _PRIORITY,
// _HANDLER_TIMEOUT, _DRAIN_TIMEOUT, _STOP_TIMEOUT, _HEALTH_ADDRESS,
// _ALLOW_UNBOUNDED_RETRIES; see the poller.Env constants) or
// [lambda.OptionsFromEnvironment] (SQSWORKER_DEADLINE_MARGIN, _FIFO_MODE,
// _ENTIRE_BATCH_FAILURE_ERROR, _REPORT_BATCH_ITEM_FAILURES,
// _INFRASTRUCTURE_FAULT_THRESHOLD; see the lambda.Env constants). So a poller variable set
// wrong does not stop a Lambda function, nor a Lambda one a poller. Durations are Go
// durations ("15s", "2m"). The shared variables:
//
//	SQSWORKER_CONCURRENCY                 messages handled at once (poller), records or
//	                                      FIFO groups at once (Lambda); default 10
//	SQSWORKER_BACKOFF_BASE, _CAP          retry backoff of failed messages; default 2s and 10m
//	SQSWORKER_DEAD_LETTER_SEND            "false" leaves permanent failures to the redrive policy
//	SQSWORKER_LOG_FORMAT                  json (default) or text, on stderr
//	SQSWORKER_LOG_LEVEL                   debug, info (default), warn or error
//
// As a Lambda function with neither of the last two set, AWS_LAMBDA_LOG_FORMAT (JSON or
// Text) and AWS_LAMBDA_LOG_LEVEL (TRACE to FATAL), from the function's logging
// configuration, choose the logger (lambda.LoggerFromEnvironment).
//
// AWS settings (region, credentials, AWS_ENDPOINT_URL_SQS) come from the SDK's default chain.
package worker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

// EnvRuntimeAPI is the variable the Lambda service sets in a function's environment.
const EnvRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// The shared settings' environment variables; see the package documentation. Each
// host's own are its package's (poller.EnvQueueURL, lambda.EnvFIFOMode, ...).
const (
	EnvConcurrency    = "SQSWORKER_CONCURRENCY"
	EnvBackoffBase    = "SQSWORKER_BACKOFF_BASE"
	EnvBackoffCap     = "SQSWORKER_BACKOFF_CAP"
	EnvDeadLetterSend = "SQSWORKER_DEAD_LETTER_SEND"
	EnvLogFormat      = "SQSWORKER_LOG_FORMAT"
	EnvLogLevel       = "SQSWORKER_LOG_LEVEL"
)

// SQSAPI is the SQS client both hosts use. *sqs.Client satisfies it.
type SQSAPI interface {
	poller.API
	lambda.SQSAPI
}

var _ SQSAPI = (*sqs.Client)(nil)

// Settings are what every host shares. Fields set in code win; the environment fills
// the zero ones (see the package documentation).
type Settings struct {
	// Concurrency is how many messages (poller) or records or FIFO groups (Lambda) are
	// handled at once; if zero, SQSWORKER_CONCURRENCY, else the host's default (10).
	Concurrency int
	// Backoff is the retry policy of failed messages; zero fields take
	// SQSWORKER_BACKOFF_BASE and _CAP, else sqsworker.Backoff's defaults.
	Backoff sqsworker.Backoff
	// Logger is the logger of the host; if nil, JSON (or SQSWORKER_LOG_FORMAT) on stderr
	// at SQSWORKER_LOG_LEVEL.
	Logger *slog.Logger
	// Observer, if set, is told about every message's life (see sqsworker.Observer).
	Observer sqsworker.Observer
	// ErrorHandler, if set, is called for every failed attempt with the handler's error.
	ErrorHandler func(ctx context.Context, message *sqsworker.Message, err error)
	// DisableDeadLetterSend leaves permanent failures to the redrive policy (ordinary
	// retries); SQSWORKER_DEAD_LETTER_SEND=false sets it.
	DisableDeadLetterSend bool
	// SQSClient is the SQS client; if nil, one is made from the default AWS
	// configuration.
	SQSClient SQSAPI
}

// Host is a place a worker can run: the Lambda runtime, the long-poll worker, or
// another (a Kubernetes job, a test harness). Run picks the first host of
// Options.Hosts whose Detect reports true.
type Host interface {
	// Name names the host in logs and errors ("lambda", "poller").
	Name() string
	// Detect reports whether the process runs on this host.
	Detect() bool
	// Run runs handler with settings until the host stops it.
	Run(ctx context.Context, handler sqsworker.Handler, settings Settings) error
}

// Options configures [Run]. The zero value is usable: everything comes from the
// environment.
type Options struct {
	// Settings are shared by every host.
	Settings
	// Hosts are the hosts Run picks from, in order; if nil, a [LambdaHost] with Lambda's
	// options, then a [PollerHost] with Poller and OnPollerStopped.
	Hosts []Host
	// Poller specifies the long-poll worker's configuration; the poller's variables fill
	// its zero fields (poller.ConfigFromEnvironment), and Settings its zero shared fields.
	// Several queues with their own handlers, weights and limits: Poller.Queues (see
	// poller.QueueConfig); a queue without a handler gets the one given to Run.
	Poller poller.Config
	// Lambda specifies options for lambda.NewBatchHandler, applied after those taken from
	// Settings and the environment (so they win).
	Lambda []lambda.Option
	// OnPollerStopped, if set, is called with the poller's counts after it stopped.
	OnPollerStopped func(poller.Stats)
}

// InLambda reports whether the process runs as a Lambda function (AWS_LAMBDA_RUNTIME_API
// is set), and so whether [Run] starts the Lambda runtime.
func InLambda() bool { return os.Getenv(EnvRuntimeAPI) != "" }

// NewLogger returns the logger Run uses when Settings.Logger is nil: JSON (or text, with
// SQSWORKER_LOG_FORMAT=text) on stderr at SQSWORKER_LOG_LEVEL (default info). Programs
// that log beside the runtime use it to share its format. The error lists every
// malformed shared variable (see the package documentation), as Run would.
func NewLogger() (*slog.Logger, error) {
	env, err := readEnv(os.Getenv)
	return env.logger(), err
}

// Run runs handler on the first of options' hosts that detects itself, with the shared
// settings filled from the environment. As a Lambda function it serves invocations and
// never returns (the runtime exits the process). As a long-poll worker it returns nil
// after a graceful drain (SIGTERM, SIGINT or ctx done), or the error that kept the poller
// from starting. Configuration problems are returned at once, all of them, each naming
// its variable.
func Run(ctx context.Context, handler sqsworker.Handler, options Options) error {
	if handler == nil {
		panic("worker: Run: nil handler")
	}
	env, err := readEnv(os.Getenv)
	if err != nil {
		return err
	}
	settings := env.fillSettings(options.Settings)
	hosts := options.Hosts
	if hosts == nil {
		hosts = []Host{
			LambdaHost{Options: options.Lambda},
			PollerHost{Config: options.Poller, OnStopped: options.OnPollerStopped},
		}
	}
	for _, host := range hosts {
		if host.Detect() {
			return host.Run(ctx, handler, settings)
		}
	}
	names := make([]string, len(hosts))
	for i, host := range hosts {
		names[i] = host.Name()
	}
	return fmt.Errorf("worker: no host detected itself (tried %s)", strings.Join(names, ", "))
}

// environment is the shared settings read from the environment; zero means unset.
type environment struct {
	concurrency    int
	backoff        sqsworker.Backoff
	deadLetterSend *bool
	logFormat      string
	logLevel       slog.Level
	lambdaLogger   *slog.Logger // from AWS_LAMBDA_LOG_*, when those decide (lambdalog.go)
}

// fillSettings fills settings' zero fields from the environment: the one place a shared
// setting meets its variable.
func (e environment) fillSettings(settings Settings) Settings {
	settings.Concurrency = cmp.Or(settings.Concurrency, e.concurrency)
	settings.Backoff = hostsettings.FillBackoff(settings.Backoff, e.backoff)
	if settings.Logger == nil {
		settings.Logger = e.logger()
	}
	if !settings.DisableDeadLetterSend && e.deadLetterSend != nil {
		settings.DisableDeadLetterSend = !*e.deadLetterSend
	}
	return settings
}

// readEnv reads the shared variables (no host's own) and reports all malformed values
// at once.
func readEnv(getenv func(string) string) (environment, error) {
	env := hostsettings.NewEnvironment("worker: ", getenv)
	var e environment
	e.concurrency, _ = env.Int(EnvConcurrency, 1)
	e.backoff.Base, _ = env.Duration(EnvBackoffBase)
	e.backoff.Cap, _ = env.Duration(EnvBackoffCap)
	if send, ok := env.Bool(EnvDeadLetterSend); ok {
		e.deadLetterSend = &send
	}
	e.logFormat = strings.ToLower(env.Value(EnvLogFormat))
	if e.logFormat != "" && e.logFormat != "json" && e.logFormat != "text" {
		env.Problem("%s=%q: want json or text", EnvLogFormat, e.logFormat)
	}
	if text := env.Value(EnvLogLevel); text != "" {
		if err := e.logLevel.UnmarshalText([]byte(text)); err != nil {
			env.Problem("%s=%q: want debug, info, warn or error", EnvLogLevel, text)
		}
	}
	e.lambdaLogger = lambdaLogger(getenv)
	return e, env.Err()
}

func (e environment) logger() *slog.Logger {
	if e.lambdaLogger != nil {
		return e.lambdaLogger
	}
	options := &slog.HandlerOptions{Level: e.logLevel}
	if e.logFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, options))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, options))
}
