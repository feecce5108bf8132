package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/claimcheck"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/opspage/humantime"
)

// jobView is the output of `jobs get` and `jobs cancel`.
type jobView struct {
	Table string `json:"table"`
	jobs.Record
	// Cancelled reports, for `jobs cancel`, that the request was recorded; Finished that
	// the job had finished, so nothing changed.
	Cancelled bool `json:"cancelled,omitempty"`
	Finished  bool `json:"finished,omitempty"`
}

func newJobsCommand(a *app) *cobra.Command {
	var flags jobsFlags
	get := &cobra.Command{
		Use:   "get ID --table TABLE",
		Short: "Show a job's record: state, attempts, starts, last error, result, progress",
		Long: `Show the record of job ID (the job-id attribute package producer gives every job) in the
DynamoDB table TABLE, as package jobs keeps it: state (enqueued, running, succeeded,
failed, retrying, dead-lettered, cancelled, interrupted), attempts, first and last start,
last error, result and progress, and for an encrypted job (package encrypt) the KMS key
its payload is encrypted under (the record never holds the payload). A worker records jobs when its handler is wrapped in
jobs.Store.Middleware. With --idempotency, the job's idempotency record (under the job
id, with --prefix) completes it: the state and result of a job recorded there
(MiddlewareConfig.InIdempotencyRecord).

A result over 256 KiB that the worker kept in S3 (jobs.Config.LargeResults) shows as its
reference (result_ref under -o json). --result prints the whole result document alone
(under -o json: the record with the document as "result"), reading such a result from
S3 (one GetObject) only inside --results-bucket and --results-prefix, the worker's
LargeResults.Location: a reference elsewhere is refused.`,
		Example: `  sqsworker jobs get 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs
  sqsworker jobs get 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs -o json
  sqsworker jobs get 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs --result --results-bucket acme-jobs --results-prefix job-results/ > result.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := flags.store(cmd.Context(), a)
			if err != nil {
				return err
			}
			record, err := store.Get(cmd.Context(), args[0])
			if errors.Is(err, jobs.ErrNotFound) {
				return fmt.Errorf("sqsworker: no record of job %s in table %s (not recorded, or expired)", args[0], flags.table)
			}
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			view := jobView{Table: flags.table, Record: record}
			if !flags.result {
				return a.printJob(view, time.Now())
			}
			if record.ResultRef != nil && flags.resultsBucket == "" {
				return fmt.Errorf("sqsworker: job %s's result is in S3 (%s): give --results-bucket and --results-prefix, the worker's jobs.Config.LargeResults.Location", record.ID, record.ResultRef)
			}
			document, err := store.ResolveResult(cmd.Context(), record)
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			if a.json() {
				view.Result = document
				return a.printJSON(view)
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", document)
			return err
		},
	}
	cancel := &cobra.Command{
		Use:   "cancel ID --table TABLE",
		Short: "Cancel a job: one not started does not run, a running one's context is cancelled",
		Long: `Cancel job ID (jobs.Store.Cancel). A job not started yet (queued, delayed, or waiting for a
retry) does not run when its message arrives: the worker deletes it with outcome
Cancelled. A running job's context is cancelled within one check interval of its worker
(MiddlewareConfig.CheckInterval) and, when its handler then returns an error, it ends as
cancelled: deleted, neither retried nor dead-lettered (one that returns nil all the same
ends as succeeded). A finished job is left as it is, and the command says so (exit 1).`,
		Example: `  sqsworker jobs cancel 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := flags.store(cmd.Context(), a)
			if err != nil {
				return err
			}
			record, err := store.Cancel(cmd.Context(), args[0])
			if finished, ok := errors.AsType[*jobs.FinishedError](err); ok {
				if a.json() {
					if err := a.printJSON(jobView{Table: flags.table, Record: finished.Record, Finished: true}); err != nil {
						return err
					}
				}
				return fmt.Errorf("sqsworker: %w", err)
			}
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			view := jobView{Table: flags.table, Record: record, Cancelled: true}
			if a.json() {
				return a.printJSON(view)
			}
			if record.State == jobs.StateRunning {
				fmt.Fprintf(a.stdout, "Job %s is running: cancellation requested; its worker cancels it within one check interval.\n", record.ID)
				return nil
			}
			fmt.Fprintf(a.stdout, "Job %s cancelled: it will not run.\n", record.ID)
			return nil
		},
	}
	for _, cmd := range []*cobra.Command{get, cancel} {
		cmd.Flags().StringVar(&flags.table, "table", "", "DynamoDB table of the job records (required)")
		cmd.Flags().BoolVar(&flags.idempotency, "idempotency", false, "also read the job's idempotency record (jobs recorded in it)")
		cmd.Flags().StringVar(&flags.prefix, "prefix", "", "with --idempotency: the idempotency middleware's key prefix (Config.KeyPrefix)")
		_ = cmd.MarkFlagRequired("table")
		envFlag(cmd, "table", tableVariable)
	}
	get.Flags().BoolVar(&flags.result, "result", false, "print the whole result document (read from S3 for a result kept there)")
	get.Flags().StringVar(&flags.resultsBucket, "results-bucket", "", "with --result: the S3 bucket of large results (jobs.Config.LargeResults.Location.Bucket)")
	get.Flags().StringVar(&flags.resultsPrefix, "results-prefix", "", "with --result: their key prefix (Location.KeyPrefix)")
	envFlag(get, "results-bucket", resultsBucketVariable)
	envFlag(get, "results-prefix", resultsPrefixVariable)
	return newGroup("jobs", "Look up or cancel a job by its id (get, cancel)", get, cancel)
}

type jobsFlags struct {
	table       string
	idempotency bool
	prefix      string
	// result, resultsBucket and resultsPrefix are get's: print the whole result, read
	// from S3 only inside that location.
	result        bool
	resultsBucket string
	resultsPrefix string
}

func (f *jobsFlags) store(ctx context.Context, a *app) (*jobs.Store, error) {
	if f.prefix != "" && !f.idempotency {
		return nil, usageError(errors.New("--prefix needs --idempotency"))
	}
	if f.resultsPrefix != "" && f.resultsBucket == "" {
		return nil, usageError(errors.New("--results-prefix needs --results-bucket"))
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg)
	config := jobs.Config{Table: f.table}
	if f.idempotency {
		config.Idempotency, config.IdempotencyKeyPrefix = idempotency.NewDynamoDBStore(client, f.table), f.prefix
	}
	if f.resultsBucket != "" {
		config.LargeResults = &jobs.LargeResults{
			// The SDK notes on stderr each GetObject answer without a checksum it can validate
			// (seen on moto); the digest of the reference is checked anyway, so keep stderr for errors.
			Client:   s3.NewFromConfig(cfg, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }),
			Location: claimcheck.Location{Bucket: f.resultsBucket, KeyPrefix: f.resultsPrefix},
		}
	}
	store, err := jobs.NewStore(client, config)
	if err != nil {
		return nil, fmt.Errorf("sqsworker: %w", err)
	}
	return store, nil
}

func (a *app) printJob(view jobView, now time.Time) error {
	if a.json() {
		return a.printJSON(view)
	}
	out := a.stdout
	r := view.Record
	fmt.Fprintf(out, "Job:         %s (table %s)\n", r.ID, view.Table)
	state := string(r.State)
	if r.CancelRequested && r.State == jobs.StateRunning {
		state += " (cancellation requested)"
	}
	fmt.Fprintf(out, "State:       %s\n", state)
	fmt.Fprintf(out, "Type:        %s\n", orDash(r.Type, "-"))
	fmt.Fprintf(out, "Queue:       %s\n", orDash(r.Queue, "-"))
	if r.PayloadKey != "" {
		fmt.Fprintf(out, "Payload:     encrypted (key %s; the record holds no payload: sqsworker dlq peek --decrypt shows a dead-lettered one)\n", r.PayloadKey)
	}
	fmt.Fprintf(out, "Attempts:    %d\n", r.Attempts)
	for _, line := range []struct {
		name string
		at   time.Time
	}{{"Enqueued:", r.EnqueuedAt}, {"First start:", r.FirstStartedAt}, {"Last start:", r.LastStartedAt}, {"Updated:", r.UpdatedAt}} {
		if !line.at.IsZero() {
			fmt.Fprintf(out, "%-12s %s (%s)\n", line.name, humantime.Timestamp(line.at), humantime.Until(line.at, now))
		}
	}
	fmt.Fprintf(out, "Last error:  %s\n", orDash(r.LastError, "-"))
	fmt.Fprintf(out, "Progress:    %s\n", orDash(string(r.Progress), "-"))
	if ref := r.ResultRef; ref != nil {
		fmt.Fprintf(out, "Result:      in S3: %s (%d bytes, SHA-256 %s); --result prints it\n", ref, ref.Size, ref.SHA256)
	} else {
		fmt.Fprintf(out, "Result:      %s\n", orDash(string(r.Result), "-"))
	}
	if !r.ExpiresAt.IsZero() {
		fmt.Fprintf(out, "Expires:     %s (%s)\n", humantime.Timestamp(r.ExpiresAt), humantime.Until(r.ExpiresAt, now))
	}
	return nil
}
