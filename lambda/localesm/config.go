// Package localesm plays the Lambda service's SQS event source mapping against a queue, for
// running a Lambda function locally before it is deployed (`sqsworker esm` is built on it):
// it long-polls the queue, forms batches, invokes a function endpoint (the Invoke API of a
// Lambda Runtime Interface Emulator, `go tool aws-lambda-rie ./bootstrap` for one), deletes
// the records that succeeded and leaves the others to come back after their visibility
// timeout, as AWS does. It is a stand-in for the mapping AWS runs, not a client of AWS's
// event source mapping API.
//
//	mapping, err := localesm.New(ctx, sqsClient, localesm.Config{
//		QueueURL:                queueURL,
//		FunctionURLs:            []string{fn.URL},
//		BatchSize:               10,
//		ReportBatchItemFailures: true,
//	})
//	if err != nil { ... }
//	go mapping.Run(ctx) // until ctx is cancelled
//
// Response rules, with ReportBatchItemFailures (see "Handling errors for an SQS event
// source in Lambda" and "Reporting batch item failures" in the Lambda developer guide):
//
//   - a function error (an X-Amz-Function-Error header, an {"errorType",...} body, a
//     non-200 status, a timeout) fails the whole batch: nothing is deleted;
//   - an empty or null response, an empty or null batchItemFailures list: every record is
//     deleted;
//   - a list of itemIdentifier values: every other record is deleted;
//   - a malformed response fails the whole batch: invalid JSON, an empty, null or unknown
//     itemIdentifier, or a key spelt with other letter cases ("BatchItemFailures",
//     "ItemIdentifier").
//
// Without ReportBatchItemFailures the response body is ignored: any invocation without a
// function error deletes the whole batch, failed records included, so a handler's failed
// records are lost unless the mapping reports batch item failures.
//
// Maximum concurrency works as AWS's does since January 2023: a batch is received only
// when an invocation slot is free, so a busy function never costs a message a receive.
// Each function URL is one execution environment serving one invocation at a time.
//
// Errors are prefixed "localesm: "; [Config.Validate] reports every problem at once.
package localesm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Defaults and AWS limits for [Config].
const (
	// DefaultBatchSize is the batch size when Config.BatchSize is zero (AWS's default for SQS).
	DefaultBatchSize = 10
	// MaxBatchSizeWithoutWindow is the largest batch size without a batching window
	// (one receive's worth).
	MaxBatchSizeWithoutWindow = sqsinfo.MaxBatchEntries
	// MaxBatchSize is the largest batch size with a batching window (standard queues).
	MaxBatchSize = 10000
	// MaxBatchingWindow is the longest batching window AWS accepts.
	MaxBatchingWindow = 300 * time.Second
	// DefaultWaitTime is the long-poll wait of each receive (SQS's maximum).
	DefaultWaitTime = sqsinfo.MaxWaitTime
	// MaxInvokePayload is Lambda's synchronous invocation payload limit; a batch stops
	// growing before its event would exceed it.
	MaxInvokePayload = 6 * 1024 * 1024
)

// Config describes one event source mapping.
type Config struct {
	// QueueURL specifies the source queue. Required.
	QueueURL string
	// FunctionURLs specifies the function's Invoke endpoints, one per execution
	// environment (each RIE serves one invocation at a time). At least one is required.
	FunctionURLs []string
	// BatchSize specifies the most records per invocation; if zero, defaults to 10.
	// Above 10 needs a BatchingWindow (AWS's rule); at most 10000.
	BatchSize int
	// BatchingWindow specifies how long to keep gathering records, from the first record
	// of a batch, before invoking with fewer than BatchSize; if zero, a batch is what one
	// receive returns. At most 300 s. AWS takes whole seconds; shorter windows are
	// allowed here to keep local tests fast.
	BatchingWindow time.Duration
	// MaximumConcurrency specifies the most concurrent invocations; if zero, defaults to
	// len(FunctionURLs). AWS accepts 2 to 1000; 1 is allowed here for local runs.
	MaximumConcurrency int
	// ReportBatchItemFailures specifies whether the mapping has FunctionResponseTypes =
	// ["ReportBatchItemFailures"]. If false, the response body is ignored and every
	// invocation without a function error deletes its whole batch.
	ReportBatchItemFailures bool
	// WaitTime specifies the long-poll wait of each receive; if zero, defaults to 20 s.
	// Whole seconds, at most 20.
	WaitTime time.Duration
	// HTTPClient specifies the client for invocations; if nil, a client without a
	// timeout (an invocation lasts as long as the function's own timeout).
	HTTPClient *http.Client
	// Logger specifies where batches and failures are logged; if nil, logs are discarded.
	Logger *slog.Logger
	// OnBatch, if set, is called after every invocation, from the goroutine that made it.
	OnBatch func(Batch)
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaximumConcurrency == 0 {
		c.MaximumConcurrency = len(c.FunctionURLs)
	}
	if c.WaitTime == 0 {
		c.WaitTime = DefaultWaitTime
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every problem of the configuration (with its defaults applied), joined.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []error
	if c.QueueURL == "" {
		problems = append(problems, errors.New("localesm: QueueURL is required"))
	}
	if len(c.FunctionURLs) == 0 {
		problems = append(problems, errors.New("localesm: at least one function URL is required"))
	}
	for _, url := range c.FunctionURLs {
		if url == "" {
			problems = append(problems, errors.New("localesm: empty function URL"))
		}
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		problems = append(problems, fmt.Errorf("localesm: BatchSize %d is outside 1 to %d", c.BatchSize, MaxBatchSize))
	case c.BatchSize > MaxBatchSizeWithoutWindow && c.BatchingWindow == 0:
		problems = append(problems, fmt.Errorf("localesm: BatchSize %d needs a BatchingWindow (more than %d records per batch)", c.BatchSize, MaxBatchSizeWithoutWindow))
	}
	if c.BatchingWindow < 0 || c.BatchingWindow > MaxBatchingWindow {
		problems = append(problems, fmt.Errorf("localesm: BatchingWindow %s is outside 0 to %s", c.BatchingWindow, MaxBatchingWindow))
	}
	if c.MaximumConcurrency < 1 || c.MaximumConcurrency > 1000 {
		problems = append(problems, fmt.Errorf("localesm: MaximumConcurrency %d is outside 1 to 1000", c.MaximumConcurrency))
	}
	if c.WaitTime < 0 || c.WaitTime > DefaultWaitTime || c.WaitTime%time.Second != 0 {
		problems = append(problems, fmt.Errorf("localesm: WaitTime %s is not whole seconds from 0 to 20 s", c.WaitTime))
	}
	return errors.Join(problems...)
}
