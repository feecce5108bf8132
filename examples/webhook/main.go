// Command webhook is the example webhook-delivery worker: one binary that runs as an ECS
// container worker (long polling, see package poller) or, built as a provided.al2023
// "bootstrap", as a Lambda function behind an SQS event source mapping (see package
// lambda); worker.Run picks the host. Each message asks to POST a JSON payload to a URL
// (see package delivery); every delivery goes through the DynamoDB idempotency middleware
// keyed on the delivery id.
//
// Configuration, from the environment: the runtime's variables as documented in package
// worker (SQSWORKER_QUEUE_URL or SQSWORKER_QUEUE_NAME, SQSWORKER_CONCURRENCY,
// SQSWORKER_HANDLER_TIMEOUT, SQSWORKER_DRAIN_TIMEOUT, SQSWORKER_HEALTH_ADDRESS,
// SQSWORKER_BACKOFF_BASE/_CAP, SQSWORKER_LOG_FORMAT, SQSWORKER_LOG_LEVEL, the Lambda
// settings), with two defaults of this example: a 15 s handler timeout (also the
// idempotency lease of a worker that dies mid-delivery; keep it below the queue's
// visibility timeout) and a 1 s to 20 s backoff. And the example's own:
//
//	SQSWORKER_IDEMPOTENCY_TABLE  the DynamoDB idempotency table (string key "id"); required
//	SQSWORKER_DELIVERY_TIMEOUT   timeout of one POST; default 5s
//	SQSWORKER_DELIVERY_ALLOW_NETWORKS
//	                             IP prefixes deliveries may go to although they are not
//	                             public ("127.0.0.1/32,10.1.0.0/16"); default none: a URL
//	                             that leads to a loopback, private or link-local address
//	                             is dead-lettered as ForbiddenDestination
//	SQSWORKER_METRICS            prometheus: the poller serves its OpenTelemetry metrics
//	                             (package otelsqsworker) at GET /metrics on
//	                             SQSWORKER_HEALTH_ADDRESS, which it then needs; default off
//
// AWS settings come from the SDK's default chain (AWS_REGION, credentials, profiles).
// The endpoints too: AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_DYNAMODB point the worker
// at the local emulator (eval "$(localstack/env)").
//
// Usage:
//
//	webhook               run until SIGTERM or SIGINT (exit 0 after a drain); as a
//	                      Lambda function, serve invocations
//	webhook healthcheck   exit 0 when the worker at SQSWORKER_HEALTH_ADDRESS (or the
//	                      address given as argument) is running, 1 otherwise; for
//	                      distroless images without curl
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/examples/webhook/delivery"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/otelsqsworker"
	"github.com/sqsworker/sqsworker/otelsqsworker/otelprom"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/worker"
)

// Log messages. The demo (examples/webhook/demo) counts the idempotency middleware's
// idempotency.LogCompletedDuplicate lines by message_id: a suppressed duplicate's one
// info line.
const logStopped = "webhook: stopped"

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
	address := os.Getenv(poller.EnvHealthAddress)
	if len(args) > 0 {
		address = args[0]
	}
	if address == "" {
		fmt.Fprintf(os.Stderr, "webhook healthcheck: no address; set %s or pass it as argument\n", poller.EnvHealthAddress)
		return 1
	}
	if err := poller.CheckHealth(context.Background(), address); err != nil {
		fmt.Fprintln(os.Stderr, "webhook healthcheck:", err)
		return 1
	}
	return 0
}

func run() int {
	cfg, configErr := loadConfig(os.Getenv)
	logger, runtimeErr := worker.NewLogger()
	if err := errors.Join(configErr, runtimeErr); err != nil {
		fmt.Fprintf(os.Stderr, "webhook: configuration:\n%v\n", err)
		return 2
	}
	ctx := context.Background()
	awsConfig, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		logger.Error("webhook: loading the AWS configuration", "error", err)
		return 1
	}
	handler := newHandler(idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(awsConfig), cfg.Table), cfg, logger)
	options := runtimeOptions(os.Getenv)
	options.Logger = logger
	options.SQSClient = sqs.NewFromConfig(awsConfig)
	if cfg.Metrics {
		provider, err := serveMetrics(&options.Poller)
		if err != nil {
			logger.Error("webhook: setting up the metrics", "error", err)
			return 1
		}
		defer func() { _ = provider.Shutdown(context.Background()) }()
	}
	options.OnPollerStopped = func(stats poller.Stats) {
		logger.Info(logStopped, "received", stats.Received, "deleted", stats.Deleted, "failed", stats.Failed,
			"deferred", stats.Deferred, "dead_lettered", stats.DeadLettered, "released", stats.Released,
			"delete_failures", stats.DeleteFailures)
	}
	logger.Info("webhook: starting", "pid", os.Getpid(), "lambda", worker.InLambda(), "table", cfg.Table)
	if err := worker.Run(ctx, handler, options); err != nil {
		logger.Error("webhook: stopped with an error", "error", err)
		return 1
	}
	return 0
}

// serveMetrics makes the poller record its messages with otelsqsworker.Metrics and serve
// them in Prometheus format at GET /metrics beside /healthz (poller.Config.MetricsHandler).
// The provider and its registry are this process's own, not the global ones; the caller
// shuts the provider down when the worker has stopped.
func serveMetrics(config *poller.Config) (*sdkmetric.MeterProvider, error) {
	provider, handler, err := otelprom.New()
	if err != nil {
		return nil, err
	}
	metrics, err := otelsqsworker.NewMetrics(otelsqsworker.MetricsConfig{MeterProvider: provider})
	if err != nil {
		return nil, err
	}
	config.Observer, config.MetricsHandler = metrics, handler
	return provider, nil
}

// newHandler is the example's handler: the delivery behind the idempotency middleware.
func newHandler(store idempotency.Store, cfg config, logger *slog.Logger) sqsworker.Handler {
	return sqsworker.Chain(
		delivery.Handler(delivery.Config{Timeout: cfg.DeliveryTimeout, AllowNetworks: cfg.AllowNetworks}),
		idempotency.Middleware(store, idempotency.Config{
			KeyFunc:   delivery.Key,
			KeyPrefix: "webhook",
			// A duplicate must carry the same target and payload; one that does not is
			// dead-lettered (IdempotencyPayloadMismatch) rather than silently dropped.
			PayloadHash: idempotency.HashJSONFields("url", "payload"),
			// A body without a usable deliveryId reaches the handler, whose parser reads
			// the key with the same function (delivery.Key) and so dead-letters it as
			// MalformedBody, the reason operators look for: it never runs unguarded.
			KeyOptional: true,
			Logger:      logger,
		}),
	)
}
