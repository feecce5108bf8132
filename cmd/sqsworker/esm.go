package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// defaultFunctionURL is the Invoke endpoint of a Runtime Interface Emulator on its
// default address (what `docker run -p 8080:8080` of a Lambda image exposes).
const defaultFunctionURL = "http://127.0.0.1:8080/2015-03-31/functions/function/invocations"

// newESMCommand builds `sqsworker esm QUEUE`, a local stand-in for the Lambda service's
// SQS event source mapping; the mapping itself is lambda/localesm.
func newESMCommand(a *app) *cobra.Command {
	var (
		functionURLs       []string
		batchSize          int
		batchingWindow     time.Duration
		maximumConcurrency int
		reportItemFailures bool
	)
	cmd := &cobra.Command{
		Use:   "esm QUEUE",
		Short: "Run a local Lambda SQS event source mapping: poll QUEUE, invoke a function endpoint, delete what succeeded",
		Long: `esm plays the Lambda service's SQS event source mapping against a queue, for local runs and
tests: it long-polls QUEUE, forms batches, invokes the function's Invoke API (a Lambda Runtime
Interface Emulator, for example "go tool aws-lambda-rie ./bootstrap"), deletes the records that
succeeded and leaves the others to come back after their visibility timeout.

With --report-batch-item-failures (the default, as the project's Terraform module sets it), the
function's batchItemFailures are honoured; a function error or a malformed response (invalid
JSON, an empty, null or unknown itemIdentifier, a key in other letter case) fails the whole
batch. With --report-batch-item-failures=false the response is ignored and every invocation
without a function error deletes its whole batch, failed records included, as AWS does.

Give --function-url once per execution environment: each Runtime Interface Emulator serves one
invocation at a time. Runs until interrupted, then prints what it did (--output json for scripts).`,
		Example: `  go tool aws-lambda-rie --runtime-interface-emulator-address 127.0.0.1:8080 ./bootstrap &
  sqsworker esm orders --batch-size 10 --batching-window 2s`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg := localesm.Config{
				QueueURL:                args[0], // validated as given, resolved to a URL below
				FunctionURLs:            functionURLs,
				BatchSize:               batchSize,
				BatchingWindow:          batchingWindow,
				MaximumConcurrency:      maximumConcurrency,
				ReportBatchItemFailures: reportItemFailures,
				Logger:                  slog.New(slog.NewTextHandler(a.stderr, nil)),
			}
			if err := cfg.Validate(); err != nil {
				return usageError(err)
			}
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			if cfg.QueueURL, err = resolveQueue(ctx, client, args[0]); err != nil {
				return err
			}
			mapping, err := localesm.New(ctx, client, cfg)
			if err != nil {
				return err
			}
			if err := mapping.Run(ctx); err != nil && !errors.Is(err, ctx.Err()) {
				return err
			}
			stats := mapping.Stats()
			if a.json() {
				return a.printJSON(stats)
			}
			fmt.Fprintf(a.stdout, "invocations %d, failed batches %d, deleted %d, left for retry %d\n",
				stats.Invocations, stats.FailedBatches, stats.Deleted, stats.Retried)
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringArrayVar(&functionURLs, "function-url", []string{defaultFunctionURL}, "function Invoke API URL; repeat once per execution environment")
	flags.IntVar(&batchSize, "batch-size", localesm.DefaultBatchSize, "most records per invocation (1-10; up to 10000 with --batching-window)")
	flags.DurationVar(&batchingWindow, "batching-window", 0, "how long to gather records before invoking with fewer than --batch-size (0-5m)")
	flags.IntVar(&maximumConcurrency, "maximum-concurrency", 0, "most concurrent invocations (default: one per --function-url)")
	flags.BoolVar(&reportItemFailures, "report-batch-item-failures", true, "honour batchItemFailures (FunctionResponseTypes=ReportBatchItemFailures)")
	return cmd
}
