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
// Options fields set in code win; the environment fills the rest. Durations are Go
// durations ("15s", "2m").
//
//	SQSWORKER_QUEUE_URL                   poller: the queue's URL; or
//	SQSWORKER_QUEUE_NAME                  poller: its name, looked up with GetQueueUrl; or
//	SQSWORKER_QUEUES                      poller: several queues, one handler, one pool:
//	                                      comma-separated URL=weight (weight optional,
//	                                      default 1), for poller.Config.Queues
//	SQSWORKER_PRIORITY                    poller: weighted (default) or strict, with
//	                                      SQSWORKER_QUEUES (poller.Config.Priority)
//	SQSWORKER_CONCURRENCY                 messages handled at once (poller), records or
//	                                      FIFO groups at once (Lambda); default 10
//	SQSWORKER_HANDLER_TIMEOUT             poller: hard timeout of one message; default 5m
//	SQSWORKER_DRAIN_TIMEOUT               poller: how long SIGTERM waits for running handlers;
//	                                      default SQSWORKER_STOP_TIMEOUT − 5s, else 25s
//	SQSWORKER_STOP_TIMEOUT                poller: how long the platform waits after SIGTERM
//	                                      before SIGKILL (ECS stopTimeout, docker --stop-timeout);
//	                                      the drain ends 5s before it and the process exits
//	                                      before it (poller.Config.StopTimeout)
//	SQSWORKER_HEALTH_ADDRESS              poller: serve GET /healthz there; default off
//	SQSWORKER_ALLOW_UNBOUNDED_RETRIES     poller: "true" accepts a queue without a redrive policy
//	SQSWORKER_BACKOFF_BASE, _CAP          retry backoff of failed messages; default 2s and 10m
//	SQSWORKER_DEAD_LETTER_SEND            "false" leaves permanent failures to the redrive policy
//	SQSWORKER_DEADLINE_MARGIN             Lambda: time kept free before the invocation deadline; default 2s
//	SQSWORKER_FIFO_MODE                   Lambda: skip-failed-group (default) or stop-at-first-failure
//	SQSWORKER_ENTIRE_BATCH_FAILURE_ERROR  Lambda: "true" fails the invocation when every record failed
//	SQSWORKER_REPORT_BATCH_ITEM_FAILURES  Lambda: "false" when the event source mapping lacks
//	                                      ReportBatchItemFailures
//	SQSWORKER_INFRASTRUCTURE_FAULT_THRESHOLD  Lambda: records in a row failing with one
//	                                      infrastructure fault that fail the invocation;
//	                                      default 2, 0 off (lambda.WithInfrastructureFaultThreshold)
//	SQSWORKER_LOG_FORMAT                  json (default) or text, on stderr
//	SQSWORKER_LOG_LEVEL                   debug, info (default), warn or error
//
// As a Lambda function with neither of these set, AWS_LAMBDA_LOG_FORMAT (JSON or Text) and
// AWS_LAMBDA_LOG_LEVEL (TRACE to FATAL), from the function's logging configuration, choose
// the logger (lambda.LoggerFromEnvironment).
//
// AWS settings (region, credentials, AWS_ENDPOINT_URL_SQS) come from the SDK's default chain.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

// EnvRuntimeAPI is the variable the Lambda service sets in a function's environment.
const EnvRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// Environment variable names; see the package documentation.
const (
	EnvQueueURL                = "SQSWORKER_QUEUE_URL"
	EnvQueueName               = "SQSWORKER_QUEUE_NAME"
	EnvQueues                  = "SQSWORKER_QUEUES"
	EnvPriority                = "SQSWORKER_PRIORITY"
	EnvConcurrency             = "SQSWORKER_CONCURRENCY"
	EnvHandlerTimeout          = "SQSWORKER_HANDLER_TIMEOUT"
	EnvDrainTimeout            = "SQSWORKER_DRAIN_TIMEOUT"
	EnvStopTimeout             = "SQSWORKER_STOP_TIMEOUT"
	EnvHealthAddress           = "SQSWORKER_HEALTH_ADDRESS"
	EnvAllowUnboundedRetries   = "SQSWORKER_ALLOW_UNBOUNDED_RETRIES"
	EnvBackoffBase             = "SQSWORKER_BACKOFF_BASE"
	EnvBackoffCap              = "SQSWORKER_BACKOFF_CAP"
	EnvDeadlineMargin          = "SQSWORKER_DEADLINE_MARGIN"
	EnvFIFOMode                = "SQSWORKER_FIFO_MODE"
	EnvEntireBatchFailureError = "SQSWORKER_ENTIRE_BATCH_FAILURE_ERROR"
	EnvReportBatchItemFailures = "SQSWORKER_REPORT_BATCH_ITEM_FAILURES"
	EnvFaultThreshold          = "SQSWORKER_INFRASTRUCTURE_FAULT_THRESHOLD"
	EnvLogFormat               = "SQSWORKER_LOG_FORMAT"
	EnvLogLevel                = "SQSWORKER_LOG_LEVEL"
	EnvDeadLetterSend          = "SQSWORKER_DEAD_LETTER_SEND"
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
	// Poller specifies the long-poll worker's configuration; the environment fills its
	// zero QueueURL (or Queues and Priority), HandlerTimeout, DrainTimeout, StopTimeout,
	// HealthCheckAddress and AllowUnboundedRetries, and Settings its zero shared fields.
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
// malformed SQSWORKER_* variable, as Run would.
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

// environment is the configuration read from the environment; zero means unset.
type environment struct {
	queueURL, queueName     string
	queues                  []poller.QueueConfig
	priority                poller.Priority
	concurrency             int
	handlerTimeout          time.Duration
	drainTimeout            time.Duration
	stopTimeout             time.Duration
	healthAddress           string
	allowUnboundedRetries   bool
	backoff                 sqsworker.Backoff
	deadlineMargin          *time.Duration
	fifoMode                *lambda.FIFOMode
	entireBatchFailureError *bool
	reportBatchItemFailures *bool
	faultThreshold          *int
	logFormat               string
	lambdaLogger            *slog.Logger // from AWS_LAMBDA_LOG_*, when those decide (lambdalog.go)
	logLevel                slog.Level
	deadLetterSend          *bool
}

// fillSettings fills settings' zero fields from the environment: the one place a shared
// setting meets its variable.
func (e environment) fillSettings(settings Settings) Settings {
	if settings.Concurrency == 0 {
		settings.Concurrency = e.concurrency
	}
	if settings.Backoff.Base == 0 {
		settings.Backoff.Base = e.backoff.Base
	}
	if settings.Backoff.Cap == 0 {
		settings.Backoff.Cap = e.backoff.Cap
	}
	if settings.Logger == nil {
		settings.Logger = e.logger()
	}
	if !settings.DisableDeadLetterSend && e.deadLetterSend != nil {
		settings.DisableDeadLetterSend = !*e.deadLetterSend
	}
	return settings
}

// readEnv reads every variable and reports all malformed values at once.
func readEnv(getenv func(string) string) (environment, error) {
	var problems []error
	value := func(name string) string { return strings.TrimSpace(getenv(name)) }
	duration := func(name string) time.Duration {
		text := value(name)
		if text == "" {
			return 0
		}
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 {
			problems = append(problems, fmt.Errorf("worker: %s=%q is not a duration such as 2s or 5m", name, text))
			return 0
		}
		return d
	}
	boolean := func(name string) *bool {
		text := value(name)
		if text == "" {
			return nil
		}
		b, err := strconv.ParseBool(text)
		if err != nil {
			problems = append(problems, fmt.Errorf("worker: %s=%q is not true or false", name, text))
			return nil
		}
		return &b
	}
	env := environment{
		queueURL:       value(EnvQueueURL),
		queueName:      value(EnvQueueName),
		handlerTimeout: duration(EnvHandlerTimeout),
		drainTimeout:   duration(EnvDrainTimeout),
		stopTimeout:    duration(EnvStopTimeout),
		healthAddress:  value(EnvHealthAddress),
		backoff:        sqsworker.Backoff{Base: duration(EnvBackoffBase), Cap: duration(EnvBackoffCap)},
		logFormat:      strings.ToLower(value(EnvLogFormat)),
		lambdaLogger:   lambdaLogger(getenv),
	}
	env.queues = parseQueues(value(EnvQueues), func(err error) { problems = append(problems, err) })
	if set := countSet(env.queueURL != "", env.queueName != "", value(EnvQueues) != ""); set > 1 {
		problems = append(problems, fmt.Errorf("worker: set only one of %s, %s and %s", EnvQueueURL, EnvQueueName, EnvQueues))
	}
	switch text := strings.ToLower(value(EnvPriority)); text {
	case "", poller.Weighted.String():
	case poller.Strict.String():
		env.priority = poller.Strict
	default:
		problems = append(problems, fmt.Errorf("worker: %s=%q: want weighted or strict", EnvPriority, text))
	}
	if text := value(EnvConcurrency); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil || n < 1 {
			problems = append(problems, fmt.Errorf("worker: %s=%q is not a positive whole number", EnvConcurrency, text))
		}
		env.concurrency = max(n, 0)
	}
	if allow := boolean(EnvAllowUnboundedRetries); allow != nil {
		env.allowUnboundedRetries = *allow
	}
	if value(EnvDeadlineMargin) != "" {
		margin := duration(EnvDeadlineMargin)
		env.deadlineMargin = &margin
	}
	switch text := value(EnvFIFOMode); text {
	case "":
	case lambda.FIFOSkipFailedGroup.String(), lambda.FIFOStopAtFirstFailure.String():
		mode := lambda.FIFOSkipFailedGroup
		if text == lambda.FIFOStopAtFirstFailure.String() {
			mode = lambda.FIFOStopAtFirstFailure
		}
		env.fifoMode = &mode
	default:
		problems = append(problems, fmt.Errorf("worker: %s=%q: want %s or %s", EnvFIFOMode, text, lambda.FIFOSkipFailedGroup, lambda.FIFOStopAtFirstFailure))
	}
	if text := value(EnvFaultThreshold); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			problems = append(problems, fmt.Errorf("worker: %s=%q is not a whole number of 0 or more", EnvFaultThreshold, text))
		} else {
			env.faultThreshold = &n
		}
	}
	env.entireBatchFailureError = boolean(EnvEntireBatchFailureError)
	env.reportBatchItemFailures = boolean(EnvReportBatchItemFailures)
	env.deadLetterSend = boolean(EnvDeadLetterSend)
	if env.logFormat != "" && env.logFormat != "json" && env.logFormat != "text" {
		problems = append(problems, fmt.Errorf("worker: %s=%q: want json or text", EnvLogFormat, env.logFormat))
	}
	if text := value(EnvLogLevel); text != "" {
		if err := env.logLevel.UnmarshalText([]byte(text)); err != nil {
			problems = append(problems, fmt.Errorf("worker: %s=%q: want debug, info, warn or error", EnvLogLevel, text))
		}
	}
	return env, errors.Join(problems...)
}

// parseQueues reads SQSWORKER_QUEUES: comma-separated URL=weight, the weight optional.
func parseQueues(text string, problem func(error)) []poller.QueueConfig {
	if text == "" {
		return nil
	}
	var queues []poller.QueueConfig
	for _, item := range strings.Split(text, ",") {
		item = strings.TrimSpace(item)
		url, weightText, hasWeight := strings.Cut(item, "=")
		queue := poller.QueueConfig{URL: url}
		if hasWeight {
			weight, err := strconv.Atoi(weightText)
			if err != nil || weight < 1 {
				problem(fmt.Errorf("worker: %s: %q has a weight that is not a positive whole number", EnvQueues, item))
				continue
			}
			queue.Weight = weight
		}
		if url == "" {
			problem(fmt.Errorf("worker: %s: an entry has no queue URL (want URL=weight, comma-separated)", EnvQueues))
			continue
		}
		queues = append(queues, queue)
	}
	return queues
}

// countSet counts the true values.
func countSet(values ...bool) int {
	n := 0
	for _, v := range values {
		if v {
			n++
		}
	}
	return n
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
