package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/cmd/sqsworker/internal/ui"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/producer"
)

// uiShutdownTimeout bounds the wait for requests in progress (a redrive) at the end.
const uiShutdownTimeout = 30 * time.Second

func newUICommand(a *app) *cobra.Command {
	var queues, metrics []string
	var addr string
	var access uiAccess
	var fromCloudWatch bool
	var outboxFrom outboxSource
	config := opspage.Config{}
	cmd := &cobra.Command{
		Use:   "ui --queue QUEUE [--queue QUEUE]... [--metrics URL]... [--table TABLE] [--outbox-table TABLE | --outbox-postgres URL]",
		Short: "Serve the operations page: live queue counts, dead-letter browser, filtered redrive, idempotency records, outbox",
		Long: `Serve the operations page on 127.0.0.1 (default 127.0.0.1:8089) and print its address.

The page shows every --queue with its visible, in-flight and delayed counts and its
dead-letter queue's depth (from the redrive policy), throughput and failure rate (from the
workers' /metrics, otelsqsworker's Prometheus handler, when --metrics is given; from the
change of the SQS counts otherwise), refreshed live; the server reads them once per queue
per --interval (GetQueueAttributes) whatever the number of open pages. Each queue's page
charts its depth, the age of its oldest message (an upper bound: the time since a poll saw
it empty; with --cloudwatch, CloudWatch's ApproximateAgeOfOldestMessage, read once a minute)
and its throughput over the last --history, from those same polls, kept in memory.
For each dead-letter queue: the messages grouped by failure reason, each message's
attributes, reason, receive count and expiry, its body on request; a filtered redrive
(the client-side mover of 'redrive move') that runs a dry run first and moves only when
you confirm its numbers; SQS's native message move task with its progress. With --table:
idempotency record lookup and release (as 'idempotency get' and 'delete'), job records
by job id (as 'jobs get'), linked from a dead letter's job-id attribute, and batches by
batch id (as 'batches show'). With
--outbox-table (DynamoDB) or --outbox-postgres (PostgreSQL): the transactional outbox's
backlog (unpublished entries, the oldest one's age, failed entries, parked FIFO groups),
its failed entries with their reasons, attempts and destinations, the parked groups with
the entry that blocks each, and Retry and Skip (as 'outbox retry' and 'outbox skip';
Skip asks for confirmation).

Security: the page moves and deletes messages and records with your AWS credentials, so
every request needs its access token, on loopback too (another user or process on this
machine could otherwise act as you). By default the token is random and printed once,
inside the page's address (open it once: the page sets an HttpOnly, SameSite=Strict
session cookie and drops the token from the address); or it is read from the
SQSWORKER_UI_TOKEN environment variable or from --token-file, never from the command line,
which every local user can read in the process list. Scripts send it as
Authorization: Bearer TOKEN. The page listens on a loopback address unless you pass
--public, and --public needs TLS (--tls-cert and --tls-key: the token and the cookie must
not cross a network in clear; the cookie is then Secure). It checks the Host header
against its address (DNS rebinding), accepts state-changing actions only as same-origin
POSTs carrying a per-process form token (CSRF), and answers a GET of an action with 405.`,
		Example: `  sqsworker ui --queue orders --queue webhooks --table webhook-idempotency --prefix webhook
  sqsworker ui --queue orders --metrics http://127.0.0.1:8080/metrics --interval 2s
  sqsworker ui --queue orders --outbox-postgres 'postgres://app@db/shop?search_path=public'
  SQSWORKER_UI_TOKEN="$(openssl rand -hex 16)" sqsworker ui --queue orders
  sqsworker ui --queue orders --addr 10.0.0.5:8089 --public --tls-cert page.crt --tls-key page.key --token-file ~/.sqsworker-ui-token`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(queues) == 0 {
				return usageError(errors.New(`required flag(s) "queue" not set`))
			}
			if err := access.check(addr); err != nil {
				return usageError(err)
			}
			if outboxFrom.given() {
				if err := outboxFrom.check(); err != nil {
					return err
				}
			}
			token, source, err := access.token()
			if err != nil {
				return usageError(err)
			}
			tlsConfig, err := access.tlsConfig()
			if err != nil {
				return err
			}
			if fromCloudWatch {
				ages, reason := a.cloudWatchAges(ctx)
				if ages == nil {
					return usageError(errors.New("--cloudwatch: " + reason))
				}
				config.Ages = ages
			}
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			for _, ref := range queues {
				url, err := resolveQueue(ctx, client, ref)
				if err != nil {
					return err
				}
				config.Queues = append(config.Queues, url)
			}
			if config.Table != "" {
				cfg, err := a.awsConfig(ctx)
				if err != nil {
					return err
				}
				client := dynamodb.NewFromConfig(cfg)
				config.Store = idempotency.NewDynamoDBStore(client, config.Table)
				config.Jobs, err = jobs.NewStore(client, jobs.Config{Table: config.Table, Idempotency: config.Store, IdempotencyKeyPrefix: config.KeyPrefix})
				if err != nil {
					return fmt.Errorf("sqsworker: %w", err)
				}
				// The page only reads batches: the producer is never called.
				sender, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
				if err != nil {
					return fmt.Errorf("sqsworker: %w", err)
				}
				if config.Batches, err = batches.New(client, sender, batches.Config{Table: config.Table}); err != nil {
					return fmt.Errorf("sqsworker: %w", err)
				}
			}
			if outboxFrom.given() {
				box, err := outboxFrom.open(ctx, a)
				if err != nil {
					return err
				}
				defer box.Close()
				config.Outbox = box
			}
			listener, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("sqsworker: ui: %w", err)
			}
			config.Addr = listener.Addr().String()
			if len(metrics) > 0 {
				config.Counters = ui.NewScraper(metrics, max(config.Interval, 5*time.Second))
			}
			config.AccessToken = token
			config.Secure = tlsConfig != nil
			config.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
			page, err := opspage.New(client, config)
			if err != nil {
				listener.Close()
				return usageError(err)
			}
			page.Start(ctx)
			defer page.Close()
			scheme := "http"
			if tlsConfig != nil {
				scheme = "https"
			}
			if source == "" {
				fmt.Fprintf(a.stdout, "Operations page: %s://%s/?%s=%s\n", scheme, config.Addr, opspage.AccessTokenParam, page.AccessToken())
				fmt.Fprintln(a.stdout, "The address holds a random access token, printed only here: open it once, a session cookie keeps it.")
			} else {
				fmt.Fprintf(a.stdout, "Operations page: %s://%s/\n", scheme, config.Addr)
				fmt.Fprintf(a.stdout, "Open it once as %s://%s/?%s=TOKEN with the token from %s; a session cookie keeps it.\n", scheme, config.Addr, opspage.AccessTokenParam, source)
			}
			return serveUntilDone(ctx, listener, page, tlsConfig)
		},
	}
	flags := cmd.Flags()
	flags.StringArrayVar(&queues, "queue", nil, "queue to show (name, URL or ARN; repeatable); its dead-letter queue comes from its redrive policy")
	flags.StringArrayVar(&metrics, "metrics", nil, "a worker's /metrics URL (otelsqsworker Prometheus handler; repeatable, summed) for throughput and failure rate")
	flags.StringVar(&addr, "addr", "127.0.0.1:8089", "listen address; a non-loopback one (the address browsers use, not 0.0.0.0) needs --public with TLS")
	flags.BoolVar(&access.public, "public", false, "allow a non-loopback --addr (requires --tls-cert and --tls-key)")
	flags.StringVar(&access.tokenFile, "token-file", "", "read the access token from this file (first line; at least 16 characters) instead of "+uiTokenVariable+" or a random one")
	flags.StringVar(&access.certFile, "tls-cert", "", "serve HTTPS with this PEM certificate (chain) file; with --tls-key")
	flags.StringVar(&access.keyFile, "tls-key", "", "the PEM private key of --tls-cert")
	flags.StringVar(&access.argvToken, "token", "", "refused: a token on the command line is visible to every local user (use "+uiTokenVariable+" or --token-file)")
	_ = flags.MarkHidden("token")
	flags.DurationVar(&config.Interval, "interval", opspage.DefaultInterval, "how often the server reads the queues' attributes (at least 500ms)")
	flags.BoolVar(&fromCloudWatch, "cloudwatch", false, "chart the oldest message's age from CloudWatch (ApproximateAgeOfOldestMessage, GetMetricStatistics once a minute per queue) instead of the page's upper bound")
	flags.DurationVar(&config.History, "history", opspage.DefaultHistory, "how far back the queue charts go (at most 24h; kept in memory from the page's own polls)")
	flags.IntVar(&config.PeekMax, "peek-max", opspage.DefaultPeekMax, "how many dead letters one look receives at most")
	flags.StringVar(&config.Table, "table", "", "DynamoDB table of the idempotency and job records (enables lookup and release)")
	envFlag(cmd, "table", tableVariable)
	flags.StringVar(&config.KeyPrefix, "prefix", "", `idempotency key prefix (Config.KeyPrefix): the stored key is "idempotency#PREFIX#KEY"`)
	outboxFrom.addFlags(cmd, "outbox-")
	return cmd
}

// serveUntilDone serves handler on listener (over TLS when tlsConfig is set) until ctx
// ends, then shuts down, letting requests in progress finish for up to
// uiShutdownTimeout.
func serveUntilDone(ctx context.Context, listener net.Listener, handler http.Handler, tlsConfig *tls.Config) error {
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- server.ServeTLS(listener, "", "")
			return
		}
		served <- server.Serve(listener)
	}()
	select {
	case err := <-served:
		return fmt.Errorf("sqsworker: ui: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uiShutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("sqsworker: ui: shutting down: %w", err)
	}
	<-served
	return nil
}
