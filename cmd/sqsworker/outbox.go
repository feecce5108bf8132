package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/outbox"
)

// outboxEntryView is one line of `outbox failed`.
type outboxEntryView struct {
	ID        string    `json:"id"`
	QueueURL  string    `json:"queue_url"`
	JobType   string    `json:"job_type,omitempty"`
	GroupID   string    `json:"group_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	FailedAt  time.Time `json:"failed_at"`
	Reason    string    `json:"reason"`
	BodyBytes int       `json:"body_bytes"`
}

// outboxBacklogView is the output of `outbox backlog`.
type outboxBacklogView struct {
	Unpublished int     `json:"unpublished"`
	LagSeconds  float64 `json:"lag_seconds"`
}

func newOutboxCommand(a *app) *cobra.Command {
	var table, postgresURL string
	var limit int
	source := func(cmd *cobra.Command) {
		cmd.Flags().StringVar(&table, "table", "", "the DynamoDB outbox table")
		cmd.Flags().StringVar(&postgresURL, "postgres", "", "the PostgreSQL outbox's connection URL (its search_path names the schema)")
	}
	// open returns the failed-entry and backlog readers of the chosen outbox.
	open := func(ctx context.Context) (failed func(int) ([]outbox.Entry, error), backlog func() (int, time.Duration, error), done func(), err error) {
		switch {
		case (table == "") == (postgresURL == ""):
			return nil, nil, nil, usageError(errors.New("give exactly one of --table (DynamoDB) and --postgres (PostgreSQL)"))
		case table != "":
			cfg, err := a.awsConfig(ctx)
			if err != nil {
				return nil, nil, nil, err
			}
			box, err := outbox.NewDynamoDB(outbox.DynamoDBConfig{Table: table})
			if err != nil {
				return nil, nil, nil, usageError(err)
			}
			client := dynamodb.NewFromConfig(cfg)
			return func(n int) ([]outbox.Entry, error) { return box.Failed(ctx, client, n) },
				func() (int, time.Duration, error) { return box.Backlog(ctx, client) }, func() {}, nil
		default:
			conn, err := pgx.Connect(ctx, postgresURL)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("sqsworker: connecting to PostgreSQL: %w", err)
			}
			box := outbox.NewPostgres(outbox.PostgresConfig{})
			return func(n int) ([]outbox.Entry, error) { return box.Failed(ctx, conn, n) },
				func() (int, time.Duration, error) { return box.Backlog(ctx, conn) },
				func() { _ = conn.Close(context.Background()) }, nil
		}
	}
	failed := &cobra.Command{
		Use:   "failed (--table TABLE | --postgres URL) [--limit N]",
		Short: "List outbox entries SQS refused (too large, invalid attribute), with the reason",
		Long: `List the entries of a transactional outbox (package outbox) that a relay marked failed
because SQS refused them: a message above the queue's MaximumMessageSize without a claim
check, an attribute SQS does not accept. They are not retried; fix the cause and write the
job again. Oldest first.`,
		Example: `  sqsworker outbox failed --table orders-outbox
  sqsworker outbox failed --postgres 'postgres://app@db/shop?search_path=public'`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, _, done, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			entries, err := list(limit)
			if err != nil {
				return err
			}
			views := make([]outboxEntryView, len(entries))
			for i, e := range entries {
				views[i] = outboxEntryView{ID: e.ID, QueueURL: e.QueueURL, JobType: e.Type, GroupID: e.GroupID,
					CreatedAt: e.CreatedAt.UTC(), FailedAt: e.FailedAt.UTC(), Reason: e.FailureReason, BodyBytes: len(e.Body)}
			}
			if a.json() {
				return a.printJSON(views)
			}
			w := a.table()
			fmt.Fprintln(w, "ID\tFAILED AT\tJOB TYPE\tQUEUE\tREASON")
			for _, v := range views {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.FailedAt.Format(time.RFC3339), v.JobType, v.QueueURL, strings.ReplaceAll(v.Reason, "\n", " "))
			}
			return w.Flush()
		},
	}
	source(failed)
	failed.Flags().IntVar(&limit, "limit", 100, "the most entries listed")
	backlog := &cobra.Command{
		Use:   "backlog (--table TABLE | --postgres URL)",
		Short: "Count the unpublished outbox entries and the age of the oldest (the relay's lag)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, count, done, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			n, lag, err := count()
			if err != nil {
				return err
			}
			view := outboxBacklogView{Unpublished: n, LagSeconds: lag.Seconds()}
			if a.json() {
				return a.printJSON(view)
			}
			fmt.Fprintf(a.stdout, "unpublished=%d lag=%s\n", view.Unpublished, lag.Round(time.Millisecond))
			return nil
		},
	}
	source(backlog)
	return newGroup("outbox", "Inspect a transactional outbox: failed entries, backlog", failed, backlog)
}
