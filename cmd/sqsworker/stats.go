package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// queueStats is what `stats` and `queues` report for one queue.
type queueStats struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	ARN      string `json:"arn"`
	FIFO     bool   `json:"fifo"`
	Visible  int    `json:"visible"`
	InFlight int    `json:"in_flight"`
	Delayed  int    `json:"delayed"`
	// OldestAgeSeconds is the CloudWatch metric ApproximateAgeOfOldestMessage (SQS has
	// no queue attribute for it); null when unknown, with the reason in OldestAgeNote.
	OldestAgeSeconds *float64               `json:"oldest_age_seconds"`
	OldestAgeNote    string                 `json:"oldest_age_note,omitempty"`
	RedrivePolicy    *sqsinfo.RedrivePolicy `json:"redrive_policy,omitempty"`
	DeadLetterQueue  *dlqStats              `json:"dead_letter_queue,omitempty"`
}

// dlqStats is the depth of a queue's dead-letter queue.
type dlqStats struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Visible  int    `json:"visible"`
	InFlight int    `json:"in_flight"`
	Delayed  int    `json:"delayed"`
	// Depth is Visible + InFlight + Delayed.
	Depth int `json:"depth"`
}

func newStatsCommand(a *app) *cobra.Command {
	var watch watchFlags
	cmd := &cobra.Command{
		Use:   "stats QUEUE",
		Short: "Show a queue's depth, age of oldest message, redrive policy and DLQ depth",
		Long: `Show one queue's statistics: visible, in-flight and delayed messages (SQS's approximate
counts), the age of the oldest message, the redrive policy and the dead-letter queue's depth.

The age of the oldest message is the CloudWatch metric ApproximateAgeOfOldestMessage (SQS
has no queue attribute for it). It is reported as unknown, with the reason, when CloudWatch
does not answer, has no datapoint yet, or when SQS is pointed at a custom endpoint (an
emulator) and no CloudWatch endpoint is set (AWS_ENDPOINT_URL_CLOUDWATCH).`,
		Example: `  sqsworker stats orders
  sqsworker stats orders --watch          # refresh every 2s until Ctrl-C
  sqsworker stats orders --watch=10s --count 3
  sqsworker stats orders -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			url, err := resolveQueue(ctx, client, args[0])
			if err != nil {
				return err
			}
			return watch.run(ctx, func(now time.Time) error {
				stats, err := a.loadStats(ctx, client, url)
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(stats)
				}
				a.printStats(stats, now, watch.interval > 0)
				return nil
			})
		},
	}
	watch.add(cmd)
	return cmd
}

func newQueuesCommand(a *app) *cobra.Command {
	var watch watchFlags
	var prefix string
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their depth, age of oldest message and DLQ depth",
		Long: `List the account's queues (ListQueues, optionally by name prefix) with visible, in-flight and
delayed counts, the age of the oldest message (CloudWatch; see 'stats --help'), the
dead-letter queue and its depth.`,
		Example: `  sqsworker queues
  sqsworker queues --prefix orders -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			return watch.run(ctx, func(now time.Time) error {
				urls, err := listQueues(ctx, client, prefix)
				if err != nil {
					return err
				}
				all := make([]*queueStats, 0, len(urls))
				for _, url := range urls {
					stats, err := a.loadStats(ctx, client, url)
					if err != nil {
						return err
					}
					all = append(all, stats)
				}
				if a.json() {
					return a.printJSON(all)
				}
				a.printQueues(all, now, watch.interval > 0)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "only queues whose name starts with this prefix")
	watch.add(cmd)
	return cmd
}

// watchFlags are --watch and --count.
type watchFlags struct {
	interval time.Duration
	count    int
}

func (w *watchFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&w.interval, "watch", 0, "refresh until Ctrl-C: --watch (every 2s) or --watch=5s")
	cmd.Flags().Lookup("watch").NoOptDefVal = "2s"
	cmd.Flags().IntVar(&w.count, "count", 0, "with --watch, stop after this many refreshes (0: until Ctrl-C)")
}

// run calls show once, or with --watch every interval until ctx ends or count is reached.
func (w *watchFlags) run(ctx context.Context, show func(now time.Time) error) error {
	if w.interval < 0 || w.count < 0 {
		return usageError(fmt.Errorf("--watch and --count must not be negative"))
	}
	for i := 1; ; i++ {
		if err := show(time.Now()); err != nil {
			return err
		}
		if w.interval == 0 || (w.count > 0 && i >= w.count) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // Ctrl-C ends a watch normally.
		case <-time.After(w.interval):
		}
	}
}

func listQueues(ctx context.Context, client *sqs.Client, prefix string) ([]string, error) {
	input := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		input.QueueNamePrefix = aws.String(prefix)
	}
	var urls []string
	pages := sqs.NewListQueuesPaginator(client, input)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("sqsworker: listing queues: %w", err)
		}
		urls = append(urls, page.QueueUrls...)
	}
	sort.Strings(urls)
	return urls, nil
}

// loadStats reads url's counts and redrive policy, its dead-letter queue's counts, and
// the age of its oldest message from CloudWatch.
func (a *app) loadStats(ctx context.Context, client *sqs.Client, url string) (*queueStats, error) {
	attributes, err := queueAttributes(ctx, client, url)
	if err != nil {
		return nil, err
	}
	stats := &queueStats{
		Name:     queueName(url),
		URL:      url,
		ARN:      attributes[string(types.QueueAttributeNameQueueArn)],
		FIFO:     attributes[string(types.QueueAttributeNameFifoQueue)] == "true",
		Visible:  atoi(attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]),
		InFlight: atoi(attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]),
		Delayed:  atoi(attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)]),
	}
	if attributes[string(types.QueueAttributeNameRedrivePolicy)] != "" {
		queue, err := sqsinfo.LoadQueue(ctx, client, url)
		if err != nil {
			return nil, err
		}
		stats.RedrivePolicy = queue.RedrivePolicy
		dlq := &dlqStats{Name: queueName(queue.RedrivePolicy.DeadLetterTargetARN), URL: queue.DeadLetterQueueURL}
		dlqAttributes, err := queueAttributes(ctx, client, queue.DeadLetterQueueURL)
		if err != nil {
			return nil, err
		}
		dlq.Visible = atoi(dlqAttributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
		dlq.InFlight = atoi(dlqAttributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		dlq.Delayed = atoi(dlqAttributes[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
		dlq.Depth = dlq.Visible + dlq.InFlight + dlq.Delayed
		stats.DeadLetterQueue = dlq
	}
	stats.OldestAgeSeconds, stats.OldestAgeNote = a.oldestAge(ctx, stats.Name)
	return stats, nil
}

func queueAttributes(ctx context.Context, client *sqs.Client, url string) (map[string]string, error) {
	output, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsworker: reading attributes of %s: %w", url, err)
	}
	return output.Attributes, nil
}

func atoi(text string) int {
	n, _ := strconv.Atoi(text)
	return n
}

// oldestAge reads ApproximateAgeOfOldestMessage (see cloudWatchAges). It returns nil
// and the reason when the age is unknown.
func (a *app) oldestAge(ctx context.Context, name string) (*float64, string) {
	ages, reason := a.cloudWatchAges(ctx)
	if ages == nil {
		return nil, "unknown: " + reason
	}
	age, known, err := ages.OldestAge(ctx, name)
	if err != nil {
		return nil, "unknown: " + oneLine(err.Error(), 200)
	}
	if !known {
		return nil, "unknown: no CloudWatch datapoint in the last 15 minutes"
	}
	seconds := age.Seconds()
	return &seconds, ""
}

func ageText(seconds *float64) string {
	if seconds == nil {
		return "n/a"
	}
	return humantime.Short(time.Duration(*seconds) * time.Second)
}

func (a *app) printStats(s *queueStats, now time.Time, watching bool) {
	out := a.stdout
	if watching {
		fmt.Fprintf(out, "--- %s\n", humantime.Timestamp(now))
	}
	kind := "standard"
	if s.FIFO {
		kind = "FIFO"
	}
	fmt.Fprintf(out, "Queue:           %s (%s)\n", s.Name, kind)
	fmt.Fprintf(out, "URL:             %s\n", s.URL)
	fmt.Fprintf(out, "Visible:         %d\n", s.Visible)
	fmt.Fprintf(out, "In flight:       %d\n", s.InFlight)
	fmt.Fprintf(out, "Delayed:         %d\n", s.Delayed)
	if s.OldestAgeSeconds != nil {
		fmt.Fprintf(out, "Oldest message:  %s\n", ageText(s.OldestAgeSeconds))
	} else {
		fmt.Fprintf(out, "Oldest message:  %s\n", s.OldestAgeNote)
	}
	if s.RedrivePolicy == nil {
		fmt.Fprintf(out, "Redrive policy:  none (failed messages are retried until they expire)\n")
		return
	}
	fmt.Fprintf(out, "Redrive policy:  maxReceiveCount %d -> %s\n", s.RedrivePolicy.MaxReceiveCount, s.DeadLetterQueue.Name)
	fmt.Fprintf(out, "DLQ depth:       %d (%d visible, %d in flight, %d delayed)\n",
		s.DeadLetterQueue.Depth, s.DeadLetterQueue.Visible, s.DeadLetterQueue.InFlight, s.DeadLetterQueue.Delayed)
}

func (a *app) printQueues(all []*queueStats, now time.Time, watching bool) {
	if watching {
		fmt.Fprintf(a.stdout, "--- %s\n", humantime.Timestamp(now))
	}
	table := a.table()
	fmt.Fprintln(table, "NAME\tTYPE\tVISIBLE\tIN-FLIGHT\tDELAYED\tOLDEST\tMAX-RECEIVES\tDLQ\tDLQ-DEPTH")
	note := ""
	for _, s := range all {
		kind, maxReceives, dlq, depth := "standard", "-", "-", "-"
		if s.FIFO {
			kind = "FIFO"
		}
		if s.RedrivePolicy != nil {
			maxReceives = strconv.Itoa(s.RedrivePolicy.MaxReceiveCount)
			dlq, depth = s.DeadLetterQueue.Name, strconv.Itoa(s.DeadLetterQueue.Depth)
		}
		if s.OldestAgeNote != "" {
			note = s.OldestAgeNote
		}
		fmt.Fprintf(table, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", s.Name, kind, s.Visible, s.InFlight, s.Delayed, ageText(s.OldestAgeSeconds), maxReceives, dlq, depth)
	}
	_ = table.Flush()
	if len(all) == 0 {
		fmt.Fprintln(a.stdout, "(no queues)")
	}
	if note != "" {
		fmt.Fprintf(a.stdout, "OLDEST n/a: %s\n", note)
	}
}
