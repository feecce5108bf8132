// Command webhook is the example webhook-delivery worker: it long-polls an SQS queue
// whose messages ask to POST a JSON payload to a URL (see package delivery), delivers
// each through the DynamoDB idempotency middleware keyed on the delivery id, and stops
// gracefully on SIGTERM.
//
// Configuration, from the environment:
//
//	SQSWORKER_QUEUE_URL          the queue's URL; or
//	SQSWORKER_QUEUE_NAME         its name, looked up with GetQueueUrl (set one of the two)
//	SQSWORKER_IDEMPOTENCY_TABLE  the DynamoDB idempotency table (string key "id"); required
//	SQSWORKER_CONCURRENCY        messages handled at once; default 10
//	SQSWORKER_HANDLER_TIMEOUT    hard timeout of one message, also the idempotency lease
//	                             of a worker that dies mid-delivery; default 15s. Keep it
//	                             below the queue's visibility timeout, so the lease of a
//	                             killed worker has ended when its message reappears.
//	SQSWORKER_DRAIN_TIMEOUT      how long SIGTERM waits for running deliveries; default 25s
//	SQSWORKER_HEALTH_ADDRESS     serve GET /healthz there (for example 127.0.0.1:8080);
//	                             default off
//	SQSWORKER_DELIVERY_TIMEOUT   timeout of one POST; default 5s
//	SQSWORKER_LOG_FORMAT         json (default) or text, on stderr
//	SQSWORKER_LOG_LEVEL          debug, info (default), warn or error
//
// AWS settings come from the SDK's default chain (AWS_REGION, credentials, profiles).
// The endpoints too: AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_DYNAMODB point the worker
// at the local emulator (eval "$(localstack/env)").
//
// Usage:
//
//	webhook               run the worker until SIGTERM or SIGINT (exit 0 after a drain)
//	webhook healthcheck   exit 0 when the worker at SQSWORKER_HEALTH_ADDRESS (or the
//	                      address given as argument) is running, 1 otherwise; for
//	                      distroless images without curl
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/webhook/delivery"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/poller"
)

// Log messages. The demo (examples/webhook/demo) counts logDuplicateSuppressed lines by
// message_id; keep the text in step with it.
const (
	logDuplicateSuppressed = "webhook: duplicate suppressed"
	logStopped             = "webhook: stopped"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "healthcheck":
			os.Exit(healthcheck(os.Args[2:]))
		default:
			fmt.Fprintf(os.Stderr, "webhook: unknown argument %q; usage: webhook [healthcheck [address]]\n", os.Args[1])
			os.Exit(2)
		}
	}
	os.Exit(run())
}

func healthcheck(args []string) int {
	address := os.Getenv(envHealthAddress)
	if len(args) > 0 {
		address = args[0]
	}
	if address == "" {
		fmt.Fprintf(os.Stderr, "webhook healthcheck: no address; set %s or pass it as argument\n", envHealthAddress)
		return 1
	}
	if err := poller.CheckHealth(context.Background(), address); err != nil {
		fmt.Fprintln(os.Stderr, "webhook healthcheck:", err)
		return 1
	}
	return 0
}

func run() int {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "webhook: configuration:\n%v\n", err)
		return 2
	}
	logger := newLogger(cfg)
	ctx := context.Background()

	awsConfig, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		logger.Error("webhook: loading the AWS configuration", "error", err)
		return 1
	}
	sqsClient := sqs.NewFromConfig(awsConfig)
	dynamoClient := dynamodb.NewFromConfig(awsConfig)

	queueURL := cfg.QueueURL
	if queueURL == "" {
		output, err := sqsClient.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(cfg.QueueName)})
		if err != nil {
			logger.Error("webhook: looking up the queue", "queue_name", cfg.QueueName, "error", err)
			return 1
		}
		queueURL = aws.ToString(output.QueueUrl)
	}

	handler := sqsworker.Chain(
		delivery.Handler(delivery.Config{Timeout: cfg.DeliveryTimeout}),
		idempotency.Middleware(idempotency.NewDynamoDBStore(dynamoClient, cfg.Table), idempotency.Config{
			KeyFunc:   idempotency.KeyFromJSONField("deliveryId"),
			KeyPrefix: "webhook",
			// A duplicate must carry the same target and payload; one that does not is
			// dead-lettered (IdempotencyPayloadMismatch) rather than silently dropped.
			PayloadHash: idempotency.HashJSONFields("url", "payload"),
			// A body without a deliveryId reaches the handler, which dead-letters it
			// as MalformedBody, the reason operators look for.
			KeyOptional: true,
			OnCompletedDuplicate: func(ctx context.Context, message *sqsworker.Message, record idempotency.Record) error {
				logger.InfoContext(ctx, logDuplicateSuppressed, "message_id", message.ID, "idempotency_key", record.Key)
				return nil
			},
			Logger: logger,
		}),
	)
	server, err := poller.New(sqsClient, poller.Config{
		QueueURL:           queueURL,
		Concurrency:        cfg.Concurrency,
		HandlerTimeout:     cfg.HandlerTimeout,
		DrainTimeout:       cfg.DrainTimeout,
		HealthCheckAddress: cfg.HealthAddress,
		Backoff:            sqsworker.Backoff{Base: 1 * time.Second, Cap: 20 * time.Second},
		Logger:             logger,
	}, handler)
	if err != nil {
		logger.Error("webhook: configuring the poller", "error", err)
		return 2
	}
	logger.Info("webhook: starting", "pid", os.Getpid(), "queue", queueURL, "table", cfg.Table,
		"concurrency", cfg.Concurrency, "handler_timeout", cfg.HandlerTimeout.String())
	err = server.Run(ctx)
	stats := server.Stats()
	attributes := []any{"received", stats.Received, "deleted", stats.Deleted, "failed", stats.Failed,
		"deferred", stats.Deferred, "dead_lettered", stats.DeadLettered, "released", stats.Released,
		"delete_failures", stats.DeleteFailures}
	if err != nil {
		logger.Error(logStopped, append(attributes, "error", err)...)
		return 1
	}
	logger.Info(logStopped, attributes...)
	return 0
}

func newLogger(cfg config) *slog.Logger {
	options := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, options))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, options))
}
