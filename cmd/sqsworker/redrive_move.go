package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/redrive"
)

func newRedriveMoveCommand(a *app) *cobra.Command {
	var from, to string
	var filters []string
	var config redrive.Config
	cmd := &cobra.Command{
		Use:   "move --from DLQ [--to QUEUE] [--filter EXPR]... [--limit N] [--dry-run]",
		Short: "Move messages on the client side: filter, limit, dry run, any destination, FIFO-safe",
		Long: `Move messages from --from to --to on the client side, for what native move tasks cannot
do. Each batch is received, sent to the destination, and deleted from --from only after SQS
confirmed the send, so an interruption can duplicate a message but never lose one.

A move takes the messages that are in --from when it starts, each once, and stops. A
message that reaches --from during the move is left there: a copy this move sent that
failed again (a worker still failing the job dead-letters it again at once) or a new dead
letter. It is recognised by the move's id (x-redrive-move-id), by the message id SQS
returned for the copy, or by a SentTimestamp after the start, and counted as "arrived".

Batches hold at most 10 messages and at most the destination's MaximumMessageSize in bytes
(body plus attribute names, types and values). Message attributes are kept, and
x-redrive-count (Number: the moves so far) then x-redrive-move-id (this move's id) are
added, each only if the message has room (10 attributes at most, the size limit): a count
that does not fit is logged instead. A message larger than the destination allows is
reported and left in --from. A failed entry is retried alone. A destination that does not
exist is refused before anything is received.

FIFO destination: the message group is kept and the message gets a new deduplication id
(<old>-r<n>): its old id, inside SQS's 5-minute window, would be accepted and silently
dropped. A warning says which groups' order changed (the message now comes after the ones
sent while it was dead-lettered).

Filters (repeatable, all must match):
  attr:NAME=VALUE     message attribute NAME equals VALUE (e.g. attr:failure-reason=HTTP410)
  reason:VALUE        short for attr:failure-reason=VALUE
  json:PATH=VALUE     JSON body field PATH (dot-separated) equals VALUE (e.g. json:payload.type=x)
  !EXPR               negation (e.g. '!reason:MalformedBody': everything but the poison messages)

--to defaults to the queue whose redrive policy targets --from, when there is exactly one.

Exit: 0 when every matching message moved, 3 when some were left (too large, send failed)
or duplicated (sent but not deleted), 1 on error.`,
		Example: `  sqsworker redrive move --from orders-dlq --filter reason:HTTP410 --dry-run
  sqsworker redrive move --from orders-dlq --to orders --filter json:payload.type=invoice --limit 100
  sqsworker redrive move --from orders-dlq.fifo --to orders.fifo -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if from == "" {
				return usageError(errors.New(`required flag(s) "from" not set`))
			}
			var parsed []redrive.Filter
			for _, expression := range filters {
				filter, err := redrive.ParseFilter(expression)
				if err != nil {
					return usageError(err)
				}
				parsed = append(parsed, filter)
			}
			if len(parsed) > 0 {
				config.Filter = redrive.All(parsed...)
			}
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			if config.Source, err = resolveQueue(ctx, client, from); err != nil {
				return err
			}
			if to == "" {
				if to, err = onlySourceQueue(ctx, client, config.Source); err != nil {
					return err
				}
			}
			if config.Destination, err = resolveQueue(ctx, client, to); err != nil {
				if errors.Is(err, redrive.ErrQueueNotFound) {
					return redrive.DestinationMissing(to, err)
				}
				return err
			}
			// The mover's Info logs (the redrive count of a message that moved without
			// it); its warnings reach stderr through result.Warnings below.
			config.Logger = slog.New(infoOnly{slog.NewTextHandler(a.stderr, nil)})
			total := 0
			if attributes, err := queueAttributes(ctx, client, config.Source); err == nil {
				total = atoi(attributes["ApproximateNumberOfMessages"])
			}
			bar := a.progress("moving")
			config.Progress = func(p redrive.Progress) { bar.set(int64(p.Received), int64(max(total, p.Received))) }
			mover, err := redrive.NewMover(client, config)
			if err != nil {
				return usageError(err)
			}
			result, err := mover.Run(ctx)
			bar.done()
			for _, warning := range result.Warnings {
				a.warn("%s", warning)
			}
			if a.json() {
				if printErr := a.printJSON(moveReport{Source: config.Source, Destination: config.Destination, DryRun: config.DryRun, Result: result}); printErr != nil {
					return printErr
				}
			} else {
				a.printMove(config, result)
			}
			if err != nil {
				return err
			}
			if result.Partial() {
				return partial()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "queue to move messages out of, usually a dead-letter queue (required)")
	cmd.Flags().StringVar(&to, "to", "", "destination queue (default: the one queue whose redrive policy targets --from)")
	cmd.Flags().StringArrayVar(&filters, "filter", nil, "move only matching messages: attr:NAME=VALUE, reason:VALUE, json:PATH=VALUE, !EXPR (repeatable, all must match)")
	cmd.Flags().IntVar(&config.MaxMessages, "limit", 0, "move at most this many matching messages (0: all)")
	cmd.Flags().BoolVar(&config.DryRun, "dry-run", false, "report what would move; send and delete nothing")
	cmd.Flags().Float64Var(&config.RatePerSecond, "rate", 0, "send at most this many messages per second (0: no limit)")
	cmd.Flags().DurationVar(&config.VisibilityTimeout, "visibility", 60*time.Second, "how long received messages stay hidden while the move runs")
	return cmd
}

// moveReport is the JSON output of `redrive move`.
type moveReport struct {
	Source      string          `json:"source"`
	Destination string          `json:"destination"`
	DryRun      bool            `json:"dry_run"`
	Result      *redrive.Result `json:"result"`
}

// onlySourceQueue returns the one queue whose redrive policy targets dlq.
func onlySourceQueue(ctx context.Context, client *sqs.Client, dlq string) (string, error) {
	sources, err := sourceQueues(ctx, client, dlq)
	if err != nil {
		return "", err
	}
	switch len(sources) {
	case 1:
		return sources[0], nil
	case 0:
		return "", usageError(fmt.Errorf("no queue has %s as its dead-letter queue; pass --to", queueName(dlq)))
	default:
		return "", usageError(fmt.Errorf("several queues use %s as their dead-letter queue; pass --to", queueName(dlq)))
	}
}

func (a *app) printMove(config redrive.Config, result *redrive.Result) {
	out := a.stdout
	filtered := ""
	if result.Skipped > 0 {
		filtered = fmt.Sprintf(", %d skipped by the filter", result.Skipped)
	}
	if config.DryRun {
		fmt.Fprintf(out, "Dry run: %d of %s received from %s would move to %s%s. Nothing was sent or deleted.\n",
			result.WouldMove, plural(result.Received, "message"), queueName(config.Source), queueName(config.Destination), filtered)
	} else {
		fmt.Fprintf(out, "Moved %d of %s received from %s to %s%s, in %s of at most %d bytes.\n",
			result.Moved, plural(result.Received, "message"), queueName(config.Source), queueName(config.Destination), filtered, plural(result.Batches, "batch"), result.MaxBatchBytes)
	}
	if len(result.TooLarge) > 0 {
		fmt.Fprintf(out, "Left in %s, larger than %d bytes: %s\n", queueName(config.Source), result.MaxBatchBytes, strings.Join(result.TooLarge, ", "))
	}
	for _, failure := range result.SendFailed {
		fmt.Fprintf(out, "Left in %s, send failed: %s (%s)\n", queueName(config.Source), failure.ID, failure.Error)
	}
	for _, failure := range result.NotDeleted {
		fmt.Fprintf(out, "Now in both queues, delete failed: %s (%s)\n", failure.ID, failure.Error)
	}
	if result.Arrived > 0 {
		fmt.Fprintf(out, "Left in %s: %s that arrived during the move (copies this move sent that failed again, or new dead letters; "+
			"x-redrive-move-id %s). Fix the cause before the next move.\n",
			queueName(config.Source), plural(result.Arrived, "message"), result.MoveID)
	}
}

// infoOnly passes on Info records only: the mover's warnings are printed from its
// Result, so they are not logged twice.
type infoOnly struct{ slog.Handler }

func (h infoOnly) Enabled(ctx context.Context, level slog.Level) bool {
	return level == slog.LevelInfo && h.Handler.Enabled(ctx, level)
}

func (h infoOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return infoOnly{h.Handler.WithAttrs(attrs)}
}

func (h infoOnly) WithGroup(name string) slog.Handler { return infoOnly{h.Handler.WithGroup(name)} }
