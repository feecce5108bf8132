package lambda

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
)

const (
	// DefaultConcurrency is how many records of a standard queue (or message groups of a
	// FIFO queue) run at once when WithConcurrency is not given. Ten is the largest batch
	// SQS hands out per receive, so a batch without a batching window runs fully parallel.
	// The poller's Config.Concurrency has the same default.
	DefaultConcurrency = hostsettings.DefaultConcurrency
	// DefaultDeadlineMargin is the deadline margin when WithDeadlineMargin is not given.
	DefaultDeadlineMargin = 2 * time.Second
)

// SQSAPI is the part of the SQS client the adapter uses: ChangeMessageVisibilityBatch for
// the backoff of failed records, SendMessage for dead-letter sends, GetQueueAttributes and
// GetQueueUrl to find the dead-letter queue, and DeleteMessageBatch when partial batch
// responses are off. *sqs.Client satisfies it.
type SQSAPI interface {
	SendMessage(ctx context.Context, input *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// FIFOMode selects what happens to the rest of a FIFO batch after a record fails.
type FIFOMode int

const (
	// FIFOSkipFailedGroup reports the failed record and every later record of the same
	// message group as failed, without handling the later ones; other groups go on. The
	// default: it keeps each group's order without blocking unrelated groups.
	FIFOSkipFailedGroup FIFOMode = iota
	// FIFOStopAtFirstFailure handles the whole batch one record at a time in batch order
	// and, after the first failure, reports every remaining record as failed without
	// handling it, whatever its group.
	FIFOStopAtFirstFailure
)

// String returns "skip-failed-group" or "stop-at-first-failure".
func (m FIFOMode) String() string {
	switch m {
	case FIFOSkipFailedGroup:
		return "skip-failed-group"
	case FIFOStopAtFirstFailure:
		return "stop-at-first-failure"
	}
	return fmt.Sprintf("FIFOMode(%d)", int(m))
}

// Option configures [NewBatchHandler]. An option only records its value, as
// aws-lambda-go's own options do; NewBatchHandler checks the result and returns every
// problem at once, as poller.New does for a Config.
type Option func(*config)

type config struct {
	concurrency             int
	fifoMode                FIFOMode
	deadlineMargin          time.Duration
	entireBatchFailureError bool
	reportBatchItemFailures bool
	backoff                 sqsworker.Backoff
	logger                  *slog.Logger
	client                  SQSAPI
	observer                sqsworker.Observer
	errorHandler            func(ctx context.Context, message *sqsworker.Message, err error)
	disableDeadLetterSend   bool
	faultThreshold          int
}

// newConfig applies options over the defaults and reports every problem of the result,
// joined, each line starting with "lambda: " and, for a setting the poller also takes,
// reading as poller.New's does after its "poller: Config.".
func newConfig(options []Option) (config, error) {
	cfg := config{
		concurrency:             DefaultConcurrency,
		deadlineMargin:          DefaultDeadlineMargin,
		reportBatchItemFailures: true,
		faultThreshold:          DefaultInfrastructureFaultThreshold,
	}
	for _, option := range options {
		option(&cfg)
	}
	var problems []error
	if err := hostsettings.Concurrency(cfg.concurrency); err != nil {
		problems = append(problems, err)
	}
	if cfg.fifoMode != FIFOSkipFailedGroup && cfg.fifoMode != FIFOStopAtFirstFailure {
		problems = append(problems, fmt.Errorf("FIFOMode %d is not a known FIFO mode", int(cfg.fifoMode)))
	}
	if cfg.deadlineMargin < 0 {
		problems = append(problems, fmt.Errorf("DeadlineMargin %s is negative", cfg.deadlineMargin))
	}
	problems = append(problems, hostsettings.Backoff(cfg.backoff)...)
	if cfg.faultThreshold < 0 {
		problems = append(problems, fmt.Errorf("InfrastructureFaultThreshold %d is negative", cfg.faultThreshold))
	}
	if len(problems) > 0 {
		return config{}, hostsettings.Prefixed("lambda: ", problems...)
	}
	if cfg.logger == nil {
		cfg.logger = LoggerFromEnvironment(os.Getenv, os.Stderr)
	}
	cfg.backoff = hostsettings.ForConcurrentUse(cfg.backoff)
	return cfg, nil
}

// WithConcurrency sets how many records of a standard queue, or message groups of a FIFO
// queue, are handled at once; if not given, DefaultConcurrency. The bound is per
// invocation: with concurrent invocations (Lambda Managed Instances) the process runs up
// to AWS_LAMBDA_MAX_CONCURRENCY times n handlers at once. NewBatchHandler refuses n < 1
// with the problem poller.New reports for the same Config.Concurrency ("lambda:
// Concurrency 0 is below 1").
func WithConcurrency(n int) Option {
	return func(c *config) { c.concurrency = n }
}

// WithFIFOMode selects the FIFO failure mode; if not given, FIFOSkipFailedGroup. A batch is
// treated as FIFO when its records come from a queue whose ARN ends in ".fifo" or carry a
// MessageGroupId. NewBatchHandler refuses a mode that is neither.
func WithFIFOMode(mode FIFOMode) Option {
	return func(c *config) { c.fifoMode = mode }
}

// WithDeadlineMargin sets the time budget kept free before the invocation's deadline
// (ctx.Deadline()); if not given, DefaultDeadlineMargin. A record is started only while at
// least margin is left; later records are reported as failed and made visible again at
// once. Handlers' contexts end margin before the deadline; a handler that has not
// returned 1 s later (or margin/2, when less) is abandoned and its record reported as
// failed, so the adapter still has time to change visibilities and return the partial
// response before Lambda's timeout. The settle calls (dead-letter sends, visibility
// changes, deletes) end 250 ms (or margin/4, when less) before the deadline however slow
// SQS is, so the response leaves before it: a record whose call was cut short is
// reported as failed. Zero disables all of this. NewBatchHandler refuses a negative
// margin.
func WithDeadlineMargin(margin time.Duration) Option {
	return func(c *config) { c.deadlineMargin = margin }
}

// WithEntireBatchFailureError makes the function return a [*BatchError] (an invocation
// error) when every record of a batch failed, instead of listing them all in
// batchItemFailures. Either way none is deleted. The default (false) keeps error metrics
// for real function errors and still lets you read the per-record failures in the logs.
func WithEntireBatchFailureError(enabled bool) Option {
	return func(c *config) { c.entireBatchFailureError = enabled }
}

// WithReportBatchItemFailures says whether the event source mapping has
// FunctionResponseTypes = ["ReportBatchItemFailures"]; if not given, true. Set it to false
// for a mapping without it: Lambda would then delete the whole batch on any successful
// response, failed records included. With false, the function deletes the records that
// succeeded itself (DeleteMessageBatch) and, if any record failed, returns a
// [*BatchError] so that Lambda deletes nothing else.
func WithReportBatchItemFailures(enabled bool) Option {
	return func(c *config) { c.reportBatchItemFailures = enabled }
}

// WithBackoff sets the retry policy for failed records; if not given, the zero
// sqsworker.Backoff (exponential from 2 s, capped at 10 min, full jitter). Records run
// concurrently; the adapter serialises calls to backoff.Random, so a seeded
// *rand.Rand's Float64 is safe here. NewBatchHandler refuses a backoff whose Validate
// reports a problem, with the problems poller.New reports for the same Config.Backoff.
func WithBackoff(backoff sqsworker.Backoff) Option {
	return func(c *config) { c.backoff = backoff }
}

// WithLogger sets the logger for per-record failures, dead-letter sends and failed SQS
// calls; if not given or nil, the logger the function's logging configuration asks for,
// [LoggerFromEnvironment](os.Getenv, os.Stderr): AWS_LAMBDA_LOG_FORMAT JSON or Text,
// AWS_LAMBDA_LOG_LEVEL, read when NewBatchHandler is called. Pass
// slog.New(slog.DiscardHandler) to discard them. Every line of an invocation carries its
// Lambda request id (aws_request_id) when the context has one, so the lines of
// concurrent invocations can be told apart. The logger is shared by every invocation.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) { c.logger = logger }
}

// WithSQSClient sets the SQS client; if not given, one is made from the default AWS
// configuration (config.LoadDefaultConfig) the first time it is needed. The client is
// shared by every record and every concurrent invocation, so it must be safe for
// concurrent use, as *sqs.Client is.
func WithSQSClient(client SQSAPI) Option {
	return func(c *config) { c.client = client }
}

// WithObserver sets the observer told about every record's life (received, started,
// finished, dead-lettered, rescheduled, released, abandoned, deleted), the same events
// the poller reports; see [sqsworker.Observer]. Several observers combine with
// sqsworker.Observers. It is called from the goroutines of every record and every
// concurrent invocation at once, with the invocation's context (what lambda/emf's
// Recorder uses to keep each invocation's counts apart), so it must be safe for
// concurrent use.
func WithObserver(observer sqsworker.Observer) Option {
	return func(c *config) { c.observer = observer }
}

// WithErrorHandler sets a function called for every failed attempt (an error, a panic,
// a timeout) with the handler's error, as poller.Config.ErrorHandler is. It is called
// concurrently, from every record and every concurrent invocation, with the record's
// invocation context.
func WithErrorHandler(handler func(ctx context.Context, message *sqsworker.Message, err error)) Option {
	return func(c *config) { c.errorHandler = handler }
}

// WithDisableDeadLetterSend, with true, makes permanent failures ([sqsworker.Permanent])
// ordinary retries, so they reach the dead-letter queue through the redrive policy
// after maxReceiveCount receives instead of at once, without the failure attributes; if
// not given, false (the adapter sends them itself): poller.Config.DisableDeadLetterSend,
// the same setting under the same name.
func WithDisableDeadLetterSend(disable bool) Option {
	return func(c *config) { c.disableDeadLetterSend = disable }
}

// WithInfrastructureFaultThreshold sets after how many records in a row (in the order
// they finish) failing with the same infrastructure fault the invocation fails as a
// whole; if not given, DefaultInfrastructureFaultThreshold (2); 0 turns it off. An
// infrastructure fault is a failed AWS SDK call that no record causes: an access denied,
// expired credentials, a missing table, throttling, a 5xx, a request that could not be
// sent (same service, operation and error code). Every other problem stays the record's
// own outcome, whatever its count: a malformed body, an unknown job type, a missing
// claim-check payload, a handler's error. When it trips, no more records start; the
// records not started keep their visibility (they come back after the visibility
// timeout, as after any invocation error); those that failed are rescheduled as usual;
// those that succeeded or were dead-lettered are deleted by the adapter
// (DeleteMessageBatch), since Lambda deletes no record of a failed invocation; and the
// function returns a [*BatchError] wrapping a [*InfrastructureFaultError]. So the
// outage shows as function errors (the Errors metric and alarm) instead of as per-record
// failures, and the records behind it do not call the failing dependency. Records
// already running when it trips finish. AWS documents that with ReportBatchItemFailures
// the event source mapping does not scale its polling down on failed invocations
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
// NewBatchHandler refuses n < 0.
func WithInfrastructureFaultThreshold(n int) Option {
	return func(c *config) { c.faultThreshold = n }
}
