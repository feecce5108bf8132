package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/redrive"
)

func newRedriveCommand(a *app) *cobra.Command {
	return newGroup("redrive", "Move dead letters back: native move tasks (start, status, cancel) or client-side (move)",
		newRedriveStartCommand(a),
		newRedriveStatusCommand(a),
		newRedriveCancelCommand(a),
		newRedriveMoveCommand(a),
	)
}

func newRedriveStartCommand(a *app) *cobra.Command {
	var options redrive.MoveTaskOptions
	var noWait, originalSources bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "start DLQ",
		Short: "Start a native SQS message move task out of a dead-letter queue and follow it",
		Long: `Start a native message move task (StartMessageMoveTask) that moves every message of the
dead-letter queue DLQ back to the queue each one failed in, or to --to. SQS does the work;
this command follows it (moved / to move) until it ends, unless --no-wait.

SQS allows one active task per source queue: a second start while one runs is refused,
with the running task named. Only a queue that is the dead-letter queue of another SQS
queue can be a source. For a filter, a limit, a dry run or a FIFO-safe move, use
'redrive move'.

Without --to, the task goes to the queue whose redrive policy targets DLQ, when there is
exactly one: the worker's own dead-letter copies (a permanent failure, with failure-reason
and failure-source-queue attributes) have no origin SQS knows, and SQS's native move needs
one (DeadLetterQueueSourceArn) for a task without a destination; every message of such a
DLQ came from that queue. With several such queues (or none), or with --original-sources,
SQS sends each message back to the queue its redrive policy moved it from, and a worker's
copy fails the task: pass --to, or use 'redrive move' (--filter
attr:failure-source-queue=ARN --to QUEUE for each source queue).
On a FIFO DLQ, prefer 'redrive move': it gives each message a new deduplication id (the
local emulator, LocalStack 4.14, keeps the old one and silently drops messages redriven
within 5 minutes of their first send).

Exit: 0 when the task COMPLETED (or started, with --no-wait), 1 when it FAILED or could not
start, 3 when it was CANCELLED.`,
		Example: `  sqsworker redrive start orders-dlq
  sqsworker redrive start orders-dlq --to orders-replay --rate 50`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			if options.RatePerSecond < 0 || options.RatePerSecond > redrive.MaxMoveRate {
				return usageError(fmt.Errorf("--rate %d: want 1 to %d messages per second (0: SQS chooses)", options.RatePerSecond, redrive.MaxMoveRate))
			}
			if originalSources && options.Destination != "" {
				return usageError(errors.New("--original-sources and --to exclude each other"))
			}
			chosen := ""
			if options.Destination == "" && !originalSources {
				if options.Destination, err = soleSourceQueue(ctx, client, args[0]); err != nil {
					return err
				}
				if options.Destination != "" {
					chosen = fmt.Sprintf(" (the queue whose redrive policy targets %s; --to chooses another)", queueName(args[0]))
				}
			}
			task, err := redrive.StartMoveTask(ctx, client, args[0], options)
			if err != nil {
				return err
			}
			if strings.HasSuffix(task.SourceARN, ".fifo") {
				a.warn("%s is a FIFO queue: redriven messages go to the end of their group; if the destination keeps the old "+
					"deduplication ids (LocalStack 4.14 does), messages first sent less than 5 minutes ago are dropped. "+
					"'sqsworker redrive move' sends them with new ids.", queueName(task.SourceARN))
			}
			if noWait {
				if a.json() {
					return a.printJSON(task)
				}
				fmt.Fprintf(a.stdout, "Started move task on %s -> %s%s.\nHandle: %s\nFollow it with: sqsworker redrive status %s\n",
					queueName(task.SourceARN), destinationText(task.DestinationARN), chosen, task.Handle, queueName(task.SourceARN))
				return nil
			}
			if !a.json() {
				fmt.Fprintf(a.stdout, "Started move task on %s -> %s%s (rate: %s).\n", queueName(task.SourceARN), destinationText(task.DestinationARN), chosen, rateText(task.RatePerSecond))
			}
			bar := a.progress("moving")
			final, err := redrive.WaitMoveTask(ctx, client, task, interval, func(t redrive.MoveTask) { bar.set(t.Moved, t.ToMove) })
			bar.done()
			if err != nil {
				return err
			}
			return a.reportTask(final)
		},
	}
	cmd.Flags().StringVar(&options.Destination, "to", "", "destination queue (default: the one queue whose redrive policy targets DLQ, else each message's original source queue)")
	cmd.Flags().BoolVar(&originalSources, "original-sources", false, "let SQS send each message to the queue its redrive policy moved it from, even when one queue targets DLQ")
	cmd.Flags().IntVar(&options.RatePerSecond, "rate", 0, "messages per second, 1 to 500 (default: SQS adapts the rate to the backlog)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "start the task and return at once")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to poll the task's progress")
	return cmd
}

// reportTask prints a finished task and maps its status to the exit code.
func (a *app) reportTask(task *redrive.MoveTask) error {
	if a.json() {
		if err := a.printJSON(task); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "%s: moved %d of %d.\n", task.Status, task.Moved, task.ToMove)
	}
	switch task.Status {
	case redrive.MoveTaskCompleted:
		return nil
	case redrive.MoveTaskCancelled:
		return partial()
	case redrive.MoveTaskFailed:
		if task.DestinationARN == "" {
			source := queueName(task.SourceARN)
			return fmt.Errorf("sqsworker: %w. Pass --to QUEUE, or use 'sqsworker redrive move --from %s --to QUEUE' "+
				"(with --filter attr:failure-source-queue=ARN for each source queue)", task.Err(), source)
		}
		return fmt.Errorf("sqsworker: %w", task.Err())
	default:
		return fmt.Errorf("sqsworker: move task %s: %s", strings.ToLower(string(task.Status)), orDash(task.FailureReason, "no reason given"))
	}
}

func destinationText(arn string) string {
	if arn == "" {
		return "original source queues"
	}
	return queueName(arn)
}

func rateText(rate int) string {
	if rate == 0 {
		return "chosen by SQS"
	}
	return fmt.Sprintf("%d/s", rate)
}

func newRedriveStatusCommand(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "status DLQ",
		Short: "List the recent native message move tasks of a dead-letter queue",
		Long: `List the most recent message move tasks of DLQ (ListMessageMoveTasks, newest first, at most
10 as SQS keeps them): status, moved / to move, rate, destination, start time, and the
handle of a running task.`,
		Example: `  sqsworker redrive status orders-dlq -o json`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			tasks, err := redrive.ListMoveTasks(ctx, client, args[0], limit)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(tasks)
			}
			if len(tasks) == 0 {
				fmt.Fprintf(a.stdout, "No move tasks on %s.\n", queueName(args[0]))
				return nil
			}
			now := time.Now()
			table := a.table()
			fmt.Fprintln(table, "STATUS\tMOVED\tTO-MOVE\tRATE\tDESTINATION\tSTARTED\tHANDLE\tFAILURE")
			for _, task := range tasks {
				fmt.Fprintf(table, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", task.Status, task.Moved, task.ToMove, rateText(task.RatePerSecond),
					destinationText(task.DestinationARN), humantime.Ago(task.StartedAt, now), orDash(task.Handle, "-"), orDash(task.FailureReason, "-"))
			}
			return table.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "how many tasks to list, 1 to 10")
	return cmd
}

func newRedriveCancelCommand(a *app) *cobra.Command {
	var handle string
	var wait bool
	cmd := &cobra.Command{
		Use:   "cancel DLQ",
		Short: "Cancel the running native message move task of a dead-letter queue",
		Long: `Cancel the running message move task of DLQ (CancelMessageMoveTask), found with
ListMessageMoveTasks, or the task --handle. Messages already moved stay moved. With --wait,
follow the task until it is CANCELLED.`,
		Example: `  sqsworker redrive cancel orders-dlq --wait`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			var task *redrive.MoveTask
			if handle != "" {
				moved, err := redrive.CancelMoveTask(ctx, client, handle)
				if err != nil {
					return err
				}
				arn, err := sourceARN(ctx, client, args[0])
				if err != nil {
					return err
				}
				task = &redrive.MoveTask{Handle: handle, Status: redrive.MoveTaskCancelling, SourceARN: arn, Moved: moved}
			} else if task, err = redrive.CancelActiveMoveTask(ctx, client, args[0]); err != nil {
				return err
			}
			if wait {
				if task, err = redrive.WaitMoveTask(ctx, client, task, 200*time.Millisecond, nil); err != nil {
					return err
				}
			}
			if a.json() {
				return a.printJSON(task)
			}
			fmt.Fprintf(a.stdout, "%s: task %s had moved %d of %d.\n", task.Status, task.Handle, task.Moved, task.ToMove)
			return nil
		},
	}
	cmd.Flags().StringVar(&handle, "handle", "", "cancel this task handle instead of the listed running task")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the task is CANCELLED")
	return cmd
}

func sourceARN(ctx context.Context, client *sqs.Client, ref string) (string, error) {
	tasks, err := redrive.ListMoveTasks(ctx, client, ref, 1)
	if err == nil && len(tasks) > 0 {
		return tasks[0].SourceARN, nil
	}
	url, err := resolveQueue(ctx, client, ref)
	if err != nil {
		return "", err
	}
	attributes, err := queueAttributes(ctx, client, url)
	if err != nil {
		return "", err
	}
	return attributes["QueueArn"], nil
}

// sourceQueues returns up to two of the queues whose redrive policy targets dlq (a URL).
func sourceQueues(ctx context.Context, client *sqs.Client, dlq string) ([]string, error) {
	output, err := client.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq), MaxResults: aws.Int32(2)})
	if err != nil {
		return nil, fmt.Errorf("sqsworker: finding the source queue of %s (pass --to): %w", dlq, err)
	}
	return output.QueueUrls, nil
}

// soleSourceQueue returns the URL of the one queue whose redrive policy targets the
// queue ref (a name, URL or ARN), or "" when there are several or none.
func soleSourceQueue(ctx context.Context, client *sqs.Client, ref string) (string, error) {
	dlq, err := resolveQueue(ctx, client, ref)
	if err != nil {
		return "", err
	}
	sources, err := sourceQueues(ctx, client, dlq)
	if err != nil || len(sources) != 1 {
		return "", err
	}
	return sources[0], nil
}
