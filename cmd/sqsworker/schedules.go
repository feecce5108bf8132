package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/scheduler"
)

// schedulesView is the output of `schedules`.
type schedulesView struct {
	Table        string             `json:"table"`
	LeaseName    string             `json:"lease_name"`
	Leader       *scheduler.Lease   `json:"leader"`
	LeaderAlive  bool               `json:"leader_alive"`
	LeaseProblem string             `json:"lease_problem,omitempty"`
	Schedules    []scheduleViewItem `json:"schedules"`
}

// scheduleViewItem is one schedule: its definition, next runs and last tick.
type scheduleViewItem struct {
	Name       string      `json:"name"`
	Cron       string      `json:"cron"`
	TimeZone   string      `json:"time_zone"`
	JobType    string      `json:"job_type"`
	Queue      string      `json:"queue"`
	CatchUp    int         `json:"catch_up"`
	Jitter     string      `json:"jitter,omitempty"`
	RunOnStart bool        `json:"run_on_start,omitempty"`
	NextRuns   []time.Time `json:"next_runs"`
	scheduler.ScheduleStatus
}

func newSchedulesCommand(a *app) *cobra.Command {
	var file, table, leaseName string
	var next int
	cmd := &cobra.Command{
		Use:   "schedules --file SCHEDULES.json --table TABLE",
		Short: "List schedules with their next runs, the last tick enqueued and the current leader",
		Long: `List the schedules of a definition file (the JSON the scheduler package and the
eventbridge-schedules Terraform module read) with their next runs (scheduled times in UTC,
before the schedule's jitter), and from the scheduler's DynamoDB table the last tick each
has enqueued (its id, message id and time), a tick claimed but not yet recorded as sent,
and the replica holding the leader lease with its fencing token and expiry. An item under
the scheduler's ids that the scheduler did not write (a malformed lease or state item,
which stops the scheduler or that schedule) is shown with what is wrong with it. The
table is read with strongly consistent reads; nothing is written.`,
		Example: `  sqsworker schedules --file schedules.json --table jobs-idempotency
  sqsworker schedules --file schedules.json --table jobs-idempotency --next 5 -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" || table == "" {
				return usageError(fmt.Errorf("schedules needs --file and --table"))
			}
			if next < 1 || next > 100 {
				return usageError(fmt.Errorf("--next %d: want 1 to 100", next))
			}
			schedules, err := scheduler.ReadSchedules(file)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg, err := a.awsConfig(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			status, err := scheduler.ReadStatus(ctx, dynamodb.NewFromConfig(cfg), table, leaseName, schedules, now)
			if err != nil {
				return err
			}
			view := schedulesView{Table: table, LeaseName: leaseName, Leader: status.Leader, LeaderAlive: status.LeaderAlive, LeaseProblem: status.LeaseProblem}
			for i, schedule := range schedules {
				runs, err := schedule.NextRuns(now, next)
				if err != nil {
					return err
				}
				item := scheduleViewItem{
					Name: schedule.Name, Cron: schedule.Cron, TimeZone: schedule.TimeZone, JobType: schedule.JobType,
					Queue: schedule.Queue, CatchUp: schedule.CatchUp, RunOnStart: schedule.RunOnStart, NextRuns: runs, ScheduleStatus: status.Schedules[i],
				}
				if item.TimeZone == "" {
					item.TimeZone = "UTC"
				}
				if schedule.Jitter > 0 {
					item.Jitter = time.Duration(schedule.Jitter).String()
				}
				view.Schedules = append(view.Schedules, item)
			}
			if a.json() {
				return a.printJSON(view)
			}
			return a.printSchedules(view, now)
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "schedule definition file (JSON: {\"schedules\": [...]})")
	cmd.Flags().StringVar(&table, "table", "", "the scheduler's DynamoDB table (scheduler.Config.Table)")
	envFlag(cmd, "table", tableVariable)
	cmd.Flags().StringVar(&leaseName, "lease-name", scheduler.DefaultLeaseName, "the lease's name (scheduler.Config.LeaseName)")
	cmd.Flags().IntVar(&next, "next", 3, "how many next runs to list per schedule")
	return cmd
}

func (a *app) printSchedules(view schedulesView, now time.Time) error {
	switch {
	case view.LeaseProblem != "":
		fmt.Fprintf(a.stdout, "Leader: none (the lease item is not a lease, so no replica takes it: %s)\n\n", view.LeaseProblem)
	case view.Leader == nil:
		fmt.Fprintf(a.stdout, "Leader: none (no replica has taken lease %q in %s)\n\n", view.LeaseName, view.Table)
	case view.LeaderAlive:
		fmt.Fprintf(a.stdout, "Leader: %s (token %d, since %s, lease expires %s)\n\n", view.Leader.Owner, view.Leader.Token,
			humantime.Timestamp(view.Leader.Acquired), humantime.Until(view.Leader.Expiry, now))
	default:
		fmt.Fprintf(a.stdout, "Leader: none (lease of %s, token %d, lapsed %s)\n\n", view.Leader.Owner, view.Leader.Token, humantime.Ago(view.Leader.Expiry, now))
	}
	w := a.table()
	fmt.Fprintln(w, "NAME\tCRON\tZONE\tJOB TYPE\tQUEUE\tNEXT RUNS (UTC)\tLAST TICK ENQUEUED\tENQUEUED")
	for _, s := range view.Schedules {
		runs := make([]string, 0, len(s.NextRuns))
		for _, run := range s.NextRuns {
			runs = append(runs, run.Format(time.RFC3339))
		}
		last := s.LastEnqueuedTick
		switch {
		case s.Problem != "":
			last = "the state item is not the scheduler's, the schedule does not tick: " + s.Problem
		case s.ClaimedTick != "":
			last = fmt.Sprintf("%s (claimed, not yet recorded as sent; send %d)", s.ClaimedTick, s.Sends)
		case last == "":
			last = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Cron, s.TimeZone, s.JobType, queueName(s.Queue),
			strings.Join(runs, ", "), last, humantime.Ago(s.EnqueuedAt, now))
	}
	return w.Flush()
}
