package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/producer"
)

// batchView is the output of `batches show`.
type batchView struct {
	Table string `json:"table"`
	batches.Status
	// State is open, sealed, succeeded or complete (see batchState).
	State string `json:"state"`
}

func newBatchesCommand(a *app) *cobra.Command {
	var table string
	show := &cobra.Command{
		Use:   "show ID --table TABLE",
		Short: "Show a batch: its job counts and its callbacks",
		Long: `Show batch ID (package batches) in the DynamoDB table TABLE: whether it is sealed, its
jobs added, pending, succeeded and dead-lettered (summed over its counter shards, each
shard's counts too when it has several), and its success and complete callbacks: their
job type, queue and job id, and when each was sent. The reads are strongly consistent
(one GetItem for the batch and one per shard). A batch past its retention is not found.`,
		Example: `  sqsworker batches show 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs
  sqsworker batches show 01KBQ2ZP5E8Y9V0D2X4M6N8R1T --table jobs -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.awsConfig(cmd.Context())
			if err != nil {
				return err
			}
			// The producer is never called: show only reads.
			sender, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			b, err := batches.New(dynamodb.NewFromConfig(cfg), sender, batches.Config{Table: table})
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			status, err := b.Get(cmd.Context(), args[0])
			switch {
			case errors.Is(err, batches.ErrInvalidAttribute):
				return usageError(fmt.Errorf("%q is not a batch id (a ULID)", args[0]))
			case errors.Is(err, batches.ErrNotFound):
				return fmt.Errorf("sqsworker: no batch %s in table %s (never opened, or past its retention)", args[0], table)
			case err != nil:
				return fmt.Errorf("sqsworker: %w", err)
			}
			return a.printBatch(batchView{Table: table, Status: status, State: status.State()}, time.Now())
		},
	}
	show.Flags().StringVar(&table, "table", "", "DynamoDB table of the batches (required)")
	_ = show.MarkFlagRequired("table")
	envFlag(show, "table", tableVariable)
	return newGroup("batches", "Look up a batch of jobs by its id (show)", show)
}

func (a *app) printBatch(view batchView, now time.Time) error {
	if a.json() {
		return a.printJSON(view)
	}
	out := a.stdout
	s := view.Status
	fmt.Fprintf(out, "Batch:       %s (table %s)\n", s.ID, view.Table)
	fmt.Fprintf(out, "State:       %s\n", view.State)
	fmt.Fprintf(out, "Jobs:        %d added, %d pending, %d succeeded, %d dead-lettered\n", s.Added, s.Pending, s.Succeeded, s.DeadLettered)
	if len(s.Shards) > 1 {
		for i, c := range s.Shards {
			fmt.Fprintf(out, "  shard %-3d  %d added, %d pending, %d succeeded, %d dead-lettered\n", i, c.Added, c.Pending, c.Succeeded, c.DeadLettered)
		}
	}
	fmt.Fprintf(out, "Created:     %s (%s)\n", humantime.Timestamp(s.CreatedAt), humantime.Ago(s.CreatedAt, now))
	fmt.Fprintf(out, "Expires:     %s (%s)\n", humantime.Timestamp(s.ExpiresAt), humantime.Until(s.ExpiresAt, now))
	for _, line := range []struct {
		name     string
		callback *batches.Callback
	}{{"Success:", s.Success}, {"Complete:", s.Complete}} {
		if line.callback == nil {
			fmt.Fprintf(out, "%-12s -\n", line.name)
			continue
		}
		sent := "not sent"
		if !line.callback.FiredAt.IsZero() {
			sent = "sent " + humantime.Timestamp(line.callback.FiredAt) + " (" + humantime.Ago(line.callback.FiredAt, now) + ")"
		}
		fmt.Fprintf(out, "%-12s %s to %s, job %s, %s\n", line.name, orDash(line.callback.JobType, "(no type)"), line.callback.QueueURL, line.callback.JobID, sent)
	}
	return nil
}
