package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/cmd/sqsworker/internal/ui"
	"github.com/sqsworker/sqsworker/idempotency"
)

// uiShutdownTimeout bounds the wait for requests in progress (a redrive) at the end.
const uiShutdownTimeout = 30 * time.Second

func newUICommand(a *app) *cobra.Command {
	var queues, metrics []string
	var addr, token string
	var public bool
	config := ui.Config{}
	cmd := &cobra.Command{
		Use:   "ui --queue QUEUE [--queue QUEUE]... [--metrics URL]... [--table TABLE]",
		Short: "Serve the operations page: live queue counts, dead-letter browser, filtered redrive, idempotency records",
		Long: `Serve the operations page on 127.0.0.1 (default 127.0.0.1:8089) and print its address.

The page shows every --queue with its visible, in-flight and delayed counts and its
dead-letter queue's depth (from the redrive policy), throughput and failure rate (from the
workers' /metrics, otelsqsworker's Prometheus handler, when --metrics is given; from the
change of the SQS counts otherwise), refreshed live; the server reads them once per queue
per --interval (GetQueueAttributes) whatever the number of open pages.
For each dead-letter queue: the messages grouped by failure reason, each message's
attributes, reason, receive count and expiry, its body on request; a filtered redrive
(the client-side mover of 'redrive move') that runs a dry run first and moves only when
you confirm its numbers; SQS's native message move task with its progress. With --table:
idempotency record lookup and release (as 'idempotency get' and 'delete').

Security: the page moves and deletes messages and records with your AWS credentials, so
it serves a browser on this machine only. It listens on a loopback address unless you
pass --public and an --addr, and then every request needs --token (open the page once as
/?token=TOKEN). It checks the Host header against its address (DNS rebinding), accepts
state-changing actions only as same-origin POSTs carrying a per-process form token
(CSRF), and answers a GET of an action with 405.`,
		Example: `  sqsworker ui --queue orders --queue webhooks --table webhook-idempotency --prefix webhook
  sqsworker ui --queue orders --metrics http://127.0.0.1:8080/metrics --interval 2s
  sqsworker ui --queue orders --addr 10.0.0.5:8089 --public --token "$(openssl rand -hex 16)"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(queues) == 0 {
				return usageError(errors.New(`required flag(s) "queue" not set`))
			}
			if err := checkUIAddress(addr, public, token); err != nil {
				return usageError(err)
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
				config.Store = idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), config.Table)
			}
			listener, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("sqsworker: ui: %w", err)
			}
			config.Addr = listener.Addr().String()
			config.MetricsURLs = metrics
			config.AccessToken = token
			config.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
			server, err := ui.New(client, config)
			if err != nil {
				listener.Close()
				return usageError(err)
			}
			server.Start(ctx)
			defer server.Stop()
			fmt.Fprintf(a.stdout, "Operations page: http://%s/\n", config.Addr)
			if token != "" {
				fmt.Fprintf(a.stdout, "Open it once as http://%s/?token=TOKEN (the --token value); a cookie keeps it.\n", config.Addr)
			}
			return serveUntilDone(ctx, listener, server.Handler())
		},
	}
	flags := cmd.Flags()
	flags.StringArrayVar(&queues, "queue", nil, "queue to show (name, URL or ARN; repeatable); its dead-letter queue comes from its redrive policy")
	flags.StringArrayVar(&metrics, "metrics", nil, "a worker's /metrics URL (otelsqsworker Prometheus handler; repeatable, summed) for throughput and failure rate")
	flags.StringVar(&addr, "addr", "127.0.0.1:8089", "listen address; a non-loopback one (the address browsers use, not 0.0.0.0) needs --public and --token")
	flags.BoolVar(&public, "public", false, "allow a non-loopback --addr (requires --token)")
	flags.StringVar(&token, "token", "", "access token every request must carry (required with --public; at least 16 characters)")
	flags.DurationVar(&config.Interval, "interval", ui.DefaultInterval, "how often the server reads the queues' attributes (at least 500ms)")
	flags.IntVar(&config.PeekMax, "peek-max", ui.DefaultPeekMax, "how many dead letters one look receives at most")
	flags.StringVar(&config.Table, "table", "", "DynamoDB table of the idempotency records (enables lookup and release)")
	flags.StringVar(&config.KeyPrefix, "prefix", "", `idempotency key prefix (Config.KeyPrefix): the stored key is "idempotency#PREFIX#KEY"`)
	return cmd
}

// checkUIAddress allows a non-loopback address only with --public and a token.
func checkUIAddress(addr string, public bool, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if token != "" && len(token) < 16 {
		return errors.New("--token: use at least 16 characters (for example: openssl rand -hex 16)")
	}
	if loopback {
		return nil
	}
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("--addr %s: name the address browsers will use (the page accepts only requests whose Host header names it), not all interfaces", addr)
	}
	if !public || token == "" {
		return fmt.Errorf("--addr %s is not a loopback address: the page acts with your AWS credentials, so serving it beyond this machine needs --public and --token", addr)
	}
	return nil
}

// serveUntilDone serves handler on listener until ctx ends, then shuts down, letting
// requests in progress finish for up to uiShutdownTimeout.
func serveUntilDone(ctx context.Context, listener net.Listener, handler http.Handler) error {
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
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
