package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/cmd/sqsworker/internal/outboxstore"
)

// outboxEntryView is one line of `outbox list --failed`.
type outboxEntryView struct {
	ID        string    `json:"id"`
	QueueURL  string    `json:"queue_url"`
	JobType   string    `json:"job_type,omitempty"`
	GroupID   string    `json:"group_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	FailedAt  time.Time `json:"failed_at"`
	Attempts  int       `json:"attempts"`
	Reason    string    `json:"reason"`
	BodyBytes int       `json:"body_bytes"`
}

// outboxParkedView is one line of `outbox list --parked`.
type outboxParkedView struct {
	QueueURL string    `json:"queue_url"`
	GroupID  string    `json:"group_id"`
	EntryID  string    `json:"entry_id"`
	FailedAt time.Time `json:"failed_at"`
	Reason   string    `json:"reason"`
	Waiting  int       `json:"waiting"`
}

// outboxBacklogView is the output of `outbox backlog`.
type outboxBacklogView struct {
	Unpublished  int     `json:"unpublished"`
	LagSeconds   float64 `json:"lag_seconds"`
	Failed       int     `json:"failed"`
	ParkedGroups int     `json:"parked_groups"`
}

// outboxSource is the flags that name an outbox: a DynamoDB table or a PostgreSQL
// connection URL. The outbox commands and the operations page take the same two, the
// page with an "outbox-" prefix (its --table is the idempotency table).
type outboxSource struct {
	prefix, table, postgresURL string
}

// addFlags adds --PREFIXtable and --PREFIXpostgres to cmd.
func (s *outboxSource) addFlags(cmd *cobra.Command, prefix string) {
	s.prefix = prefix
	flags := cmd.Flags()
	flags.StringVar(&s.table, prefix+"table", "", "the DynamoDB outbox table")
	flags.StringVar(&s.postgresURL, prefix+"postgres", "", "the PostgreSQL outbox's connection URL (its search_path names the schema)")
}

// given reports whether either flag is set.
func (s *outboxSource) given() bool { return s.table != "" || s.postgresURL != "" }

// check returns a usage error unless exactly one of the flags is set.
func (s *outboxSource) check() error {
	if (s.table == "") == (s.postgresURL == "") {
		return usageError(fmt.Errorf("give exactly one of --%stable (DynamoDB) and --%spostgres (PostgreSQL)", s.prefix, s.prefix))
	}
	return nil
}

// open returns the outbox of the table (DynamoDB) or the URL (PostgreSQL). Errors: both
// or neither given (a usage error), a bad table name, a database that does not answer.
func (s *outboxSource) open(ctx context.Context, a *app) (outboxstore.Store, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	switch {
	case s.table != "":
		cfg, err := a.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		box, err := outboxstore.NewDynamoDB(dynamodb.NewFromConfig(cfg), s.table)
		if err != nil {
			return nil, usageError(err)
		}
		return box, nil
	default:
		return outboxstore.OpenPostgres(ctx, s.postgresURL)
	}
}

func newOutboxCommand(a *app) *cobra.Command {
	var from outboxSource
	source := func(cmd *cobra.Command) { from.addFlags(cmd, "") }
	// with runs do on the chosen outbox.
	with := func(do func(cmd *cobra.Command, args []string, box outboxstore.Store) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			box, err := from.open(cmd.Context(), a)
			if err != nil {
				return err
			}
			defer box.Close()
			return do(cmd, args, box)
		}
	}
	list := newOutboxListCommand(a, with)
	source(list)
	retry := &cobra.Command{
		Use:   "retry (--table TABLE | --postgres URL) ID...",
		Short: "Send failed outbox entries again (their attempts start over; a parked group goes on from them)",
		Long: `Make failed outbox entries unpublished again, due at once, with no attempts counted:
the relay sends them on its next cycle. Use it once the cause is fixed (the queue
exists, the access is granted). An entry of a parked FIFO message group releases the
group: its later entries follow it in order.`,
		Example: `  sqsworker outbox retry --table orders-outbox 01a2333a9773270dd3f4671ce530b230`,
		Args:    minArgs(1),
		RunE: with(func(cmd *cobra.Command, ids []string, box outboxstore.Store) error {
			return eachEntry(cmd.Context(), a, ids, "retried", box.Retry)
		}),
	}
	source(retry)
	skip := &cobra.Command{
		Use:   "skip (--table TABLE | --postgres URL) ID...",
		Short: "Delete failed outbox entries without sending them (a parked group goes on with its next entry)",
		Long: `Delete failed outbox entries: they are never sent. An entry of a parked FIFO message
group releases the group, whose next entry goes out next. List the entry first
('outbox list --failed -o json' has its queue, type and reason): skipping loses its job.`,
		Example: `  sqsworker outbox skip --postgres 'postgres://app@db/shop' 01a2333a9773270dd3f4671ce530b230`,
		Args:    minArgs(1),
		RunE: with(func(cmd *cobra.Command, ids []string, box outboxstore.Store) error {
			return eachEntry(cmd.Context(), a, ids, "skipped", box.Skip)
		}),
	}
	source(skip)
	backlog := &cobra.Command{
		Use:   "backlog (--table TABLE | --postgres URL)",
		Short: "Count the unpublished outbox entries, the age of the oldest (the relay's lag), the failed entries and the parked groups",
		Args:  exactArgs(0),
		RunE: with(func(cmd *cobra.Command, args []string, box outboxstore.Store) error {
			s, err := box.Summary(cmd.Context())
			if err != nil {
				return err
			}
			view := outboxBacklogView{Unpublished: s.Unpublished, LagSeconds: s.OldestUnpublished.Seconds(), Failed: s.Failed, ParkedGroups: s.ParkedGroups}
			if a.json() {
				return a.printJSON(view)
			}
			fmt.Fprintf(a.stdout, "unpublished=%d lag=%s failed=%d parked=%d\n", view.Unpublished, s.OldestUnpublished.Round(time.Millisecond), view.Failed, view.ParkedGroups)
			return nil
		}),
	}
	source(backlog)
	return newGroup("outbox", "Inspect and repair a transactional outbox: failed entries, parked groups, backlog", list, retry, skip, backlog)
}

func newOutboxListCommand(a *app, with func(func(*cobra.Command, []string, outboxstore.Store) error) func(*cobra.Command, []string) error) *cobra.Command {
	var limit int
	var failed, parked bool
	list := &cobra.Command{
		Use:     "list (--table TABLE | --postgres URL) [--failed | --parked] [--limit N]",
		Aliases: []string{"failed"},
		Short:   "List failed outbox entries with their reasons (--failed, the default) or parked FIFO groups (--parked)",
		Long: `--failed lists the entries of a transactional outbox (package outbox) that a relay
marked failed: refused by SQS or the producer (a message above the queue's
MaximumMessageSize without a claim check, an attribute SQS does not accept), entries that
cannot be decoded, and entries whose attempts ran out (a queue that does not exist,
denied access). They are not sent again: fix the cause, then 'outbox retry' or
'outbox skip' them.

--parked lists the FIFO message groups held back by a failed entry: its id and reason,
and how many entries wait behind it. Other groups go on; retrying or skipping the entry
releases the group.`,
		Example: `  sqsworker outbox list --table orders-outbox
  sqsworker outbox list --parked --postgres 'postgres://app@db/shop?search_path=public'`,
		Args: exactArgs(0),
		RunE: with(func(cmd *cobra.Command, args []string, box outboxstore.Store) error {
			if failed && parked {
				return usageError(errors.New("give at most one of --failed and --parked"))
			}
			if parked {
				return printParked(cmd.Context(), a, box, limit)
			}
			return printFailed(cmd.Context(), a, box, limit)
		}),
	}
	list.Flags().BoolVar(&failed, "failed", false, "list failed entries (the default)")
	list.Flags().BoolVar(&parked, "parked", false, "list parked FIFO message groups")
	list.Flags().IntVar(&limit, "limit", 100, "the most entries or groups listed")
	return list
}

func printFailed(ctx context.Context, a *app, box outboxstore.Store, limit int) error {
	entries, err := box.Failed(ctx, limit)
	if err != nil {
		return err
	}
	views := make([]outboxEntryView, len(entries))
	for i, e := range entries {
		views[i] = outboxEntryView{ID: e.ID, QueueURL: e.QueueURL, JobType: e.Type, GroupID: e.GroupID, CreatedAt: e.CreatedAt.UTC(),
			FailedAt: e.FailedAt.UTC(), Attempts: e.Attempts, Reason: e.FailureReason, BodyBytes: len(e.Job.Body)}
	}
	if a.json() {
		return a.printJSON(views)
	}
	w := a.table()
	fmt.Fprintln(w, "ID\tFAILED AT\tATTEMPTS\tJOB TYPE\tGROUP\tQUEUE\tREASON")
	for _, v := range views {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", v.ID, v.FailedAt.Format(time.RFC3339), v.Attempts, v.JobType, v.GroupID, v.QueueURL, oneLine(v.Reason, reasonWidth))
	}
	return w.Flush()
}

func printParked(ctx context.Context, a *app, box outboxstore.Store, limit int) error {
	groups, err := box.Parked(ctx, limit)
	if err != nil {
		return err
	}
	views := make([]outboxParkedView, len(groups))
	for i, g := range groups {
		views[i] = outboxParkedView{QueueURL: g.QueueURL, GroupID: g.GroupID, EntryID: g.Entry.ID, FailedAt: g.Entry.FailedAt.UTC(),
			Reason: g.Entry.FailureReason, Waiting: g.Waiting}
	}
	if a.json() {
		return a.printJSON(views)
	}
	w := a.table()
	fmt.Fprintln(w, "GROUP\tQUEUE\tWAITING\tENTRY\tFAILED AT\tREASON")
	for _, v := range views {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", v.GroupID, v.QueueURL, v.Waiting, v.EntryID, v.FailedAt.Format(time.RFC3339), oneLine(v.Reason, reasonWidth))
	}
	return w.Flush()
}

// eachEntry applies do to each id in turn, printing "<done> <id>"; it stops at the
// first error.
func eachEntry(ctx context.Context, a *app, ids []string, done string, do func(ctx context.Context, id string) error) error {
	for _, id := range ids {
		if err := do(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s %s\n", done, id)
	}
	return nil
}

// reasonWidth bounds a reason in the table output (-o json has it whole).
const reasonWidth = 300

// minArgs wraps cobra.MinimumNArgs so that a wrong count is a usage error.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageError(err)
		}
		return nil
	}
}
