package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/provision"
	"github.com/sqsworker/sqsworker/sqsinfo"
	"github.com/sqsworker/sqsworker/table"
)

func newCreateCommand(a *app) *cobra.Command {
	return newGroup("create", "Create a queue with its dead-letter queue, or the jobs table (for local work and tests)",
		newCreateQueueCommand(a),
		newCreateTableCommand(a),
	)
}

// createdQueue is the output of `create queue`.
type createdQueue struct {
	Name                     string `json:"name"`
	URL                      string `json:"url"`
	ARN                      string `json:"arn"`
	DeadLetterQueueURL       string `json:"dead_letter_queue_url"`
	DeadLetterQueueARN       string `json:"dead_letter_queue_arn"`
	FIFO                     bool   `json:"fifo"`
	VisibilityTimeoutSeconds int    `json:"visibility_timeout_seconds"`
	MaxReceiveCount          int    `json:"max_receive_count"`
	Created                  bool   `json:"created"`
}

// wholeSeconds converts a duration flag to seconds, refusing fractions.
func wholeSeconds(flag string, d time.Duration) (int, error) {
	if d < 0 || d%time.Second != 0 {
		return 0, usageError(fmt.Errorf("--%s %s: want whole seconds, such as 30s or 14d as 336h", flag, d))
	}
	return int(d / time.Second), nil
}

// defaultDLQName is NAME-dlq, keeping a FIFO queue's ".fifo" suffix at the end.
func defaultDLQName(name string) string {
	if base, ok := strings.CutSuffix(name, ".fifo"); ok {
		return base + "-dlq.fifo"
	}
	return name + "-dlq"
}

func newCreateQueueCommand(a *app) *cobra.Command {
	var fifo bool
	var dlqName string
	var visibility, retention, dlqRetention time.Duration
	var maxReceives int
	cmd := &cobra.Command{
		Use:   "queue NAME",
		Short: "Create a queue and its dead-letter queue, joined by a redrive policy",
		Long: `Create (or update) the queue NAME and its dead-letter queue (--dlq, default NAME-dlq,
or NAME-dlq.fifo for NAME.fifo), the dead-letter queue first, then the queue with a redrive
policy that moves a message there after --max-receives receives.

An existing queue is reused and its attributes set to the values given. The dead-letter
queue keeps messages longer than the queue (--dlq-retention > --retention): a standard
queue keeps a message's original enqueue time when it moves it, so a shorter DLQ
retention would delete failures before anyone looks at them. Long polling (20 s) and the
largest message size (1 MiB) are set on both.

--fifo makes both FIFO queues; NAME must then end in .fifo.

maxReceiveCount: every receive counts (a peek, a lost response, a crash), so below 5
the worker host refuses or warns (see package poller); SQS accepts 1 to 1000.`,
		Example: `  sqsworker create queue webhook-deliveries --visibility 30s --max-receives 5
  sqsworker create queue orders.fifo --fifo --visibility 2m`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if dlqName == "" {
				dlqName = defaultDLQName(name)
			}
			visibilitySeconds, err := wholeSeconds("visibility", visibility)
			if err != nil {
				return err
			}
			retentionSeconds, err := wholeSeconds("retention", retention)
			if err != nil {
				return err
			}
			dlqRetentionSeconds, err := wholeSeconds("dlq-retention", dlqRetention)
			if err != nil {
				return err
			}
			if dlqRetentionSeconds <= retentionSeconds {
				return usageError(fmt.Errorf("--dlq-retention %s must be longer than --retention %s: a standard queue keeps a message's original enqueue time when it moves it to the dead-letter queue, which would then delete it sooner", dlqRetention, retention))
			}
			resources := &provision.Resources{Queues: []provision.Queue{{
				Name:                     name,
				FIFO:                     fifo,
				VisibilityTimeoutSeconds: visibilitySeconds,
				MessageRetentionSeconds:  retentionSeconds,
				ReceiveWaitTimeSeconds:   int(sqsinfo.MaxWaitTime / time.Second),
				MaximumMessageSize:       sqsinfo.MaxMessageBytes,
				MaxReceiveCount:          maxReceives,
				DeadLetterQueue:          &provision.DeadLetterQueue{Name: dlqName, MessageRetentionSeconds: dlqRetentionSeconds},
			}}}
			if err := resources.Validate(); err != nil {
				return usageError(fmt.Errorf("create queue: %w", err))
			}
			ctx := cmd.Context()
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			result, err := provision.Apply(ctx, client, nil, resources, provision.Options{})
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			queue := result.Queue(name)
			out := createdQueue{
				Name: name, URL: queue.URL, ARN: queue.ARN, DeadLetterQueueURL: queue.DeadLetterQueueURL, DeadLetterQueueARN: queue.DeadLetterQueueARN,
				FIFO: fifo, VisibilityTimeoutSeconds: visibilitySeconds, MaxReceiveCount: maxReceives, Created: queue.Created,
			}
			if a.json() {
				return a.printJSON(out)
			}
			verb := "Created"
			if !queue.Created {
				verb = "Updated existing"
			}
			kind := "standard"
			if fifo {
				kind = "FIFO"
			}
			fmt.Fprintf(a.stdout, "%s %s queue %s (visibility timeout %s), redrive policy: maxReceiveCount %d -> %s.\n",
				verb, kind, name, visibility, maxReceives, dlqName)
			fmt.Fprintf(a.stdout, "URL:  %s\nDLQ:  %s\n", queue.URL, queue.DeadLetterQueueURL)
			return nil
		},
	}
	cmd.Flags().BoolVar(&fifo, "fifo", false, "FIFO queues (NAME must end in .fifo)")
	cmd.Flags().StringVar(&dlqName, "dlq", "", "dead-letter queue name (default NAME-dlq)")
	cmd.Flags().DurationVar(&visibility, "visibility", 30*time.Second, "visibility timeout, 0 to 12h")
	cmd.Flags().IntVar(&maxReceives, "max-receives", 5, "maxReceiveCount of the redrive policy, 1 to 1000")
	cmd.Flags().DurationVar(&retention, "retention", 4*24*time.Hour, "message retention of the queue, 1m to 336h (14 days)")
	cmd.Flags().DurationVar(&dlqRetention, "dlq-retention", 14*24*time.Hour, "message retention of the dead-letter queue, longer than --retention")
	return cmd
}

// createdTable is the output of `create table`.
type createdTable struct {
	Name         string `json:"name"`
	PartitionKey string `json:"partition_key"`
	TTLAttribute string `json:"ttl_attribute"`
	Created      bool   `json:"created"`
	TTLWarning   string `json:"ttl_warning,omitempty"`
}

func newCreateTableCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table NAME",
		Short: fmt.Sprintf("Create the jobs table: idempotency records, unique jobs, the scheduler (string key %q, on-demand, TTL on %q)", table.PartitionKey, table.TTLAttribute),
		Long: fmt.Sprintf(`Create (or reuse) the DynamoDB table NAME that package idempotency, unique jobs (package
producer) and the scheduler share, as package table declares it: string partition key
%q, on-demand billing, and DynamoDB TTL on %q (where every item's expiry is written in
epoch seconds). An existing table is reused when its key matches.

TTL only cleans up: every reader checks expiry itself, so a table (or an emulator) without
working TTL still gives correct results.`, table.PartitionKey, table.TTLAttribute),
		Example: `  sqsworker create table webhook-idempotency`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resources := &provision.Resources{Tables: []provision.Table{{Name: args[0], PartitionKey: table.PartitionKey, TTLAttribute: table.TTLAttribute}}}
			if err := resources.Validate(); err != nil {
				return usageError(fmt.Errorf("create table: %w", err))
			}
			ctx := cmd.Context()
			cfg, err := a.awsConfig(ctx)
			if err != nil {
				return err
			}
			result, err := provision.Apply(ctx, nil, dynamodb.NewFromConfig(cfg), resources, provision.Options{})
			if err != nil {
				return fmt.Errorf("sqsworker: %w", err)
			}
			created := result.Tables[0]
			out := createdTable{Name: created.Name, PartitionKey: table.PartitionKey, TTLAttribute: table.TTLAttribute, Created: created.Created, TTLWarning: created.TTLWarning}
			if a.json() {
				return a.printJSON(out)
			}
			verb := "Created"
			if !created.Created {
				verb = "Reused existing"
			}
			fmt.Fprintf(a.stdout, "%s table %s (partition key %q, TTL on %q).\n", verb, created.Name, out.PartitionKey, out.TTLAttribute)
			if created.TTLWarning != "" {
				fmt.Fprintf(a.stdout, "TTL not enabled: %s (records still expire in code; only the clean-up is missing).\n", created.TTLWarning)
			}
			return nil
		},
	}
	return cmd
}
