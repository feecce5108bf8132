package worker

import (
	"context"
	"fmt"
	"os"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

// LambdaHost runs the handler as a Lambda function behind an SQS event source mapping
// (lambda.NewBatchHandler under aws-lambda-go's runtime). It detects itself by
// AWS_LAMBDA_RUNTIME_API.
type LambdaHost struct {
	// Options are applied after those taken from Settings and the environment.
	Options []lambda.Option
}

// Name returns "lambda".
func (LambdaHost) Name() string { return "lambda" }

// Detect reports whether AWS_LAMBDA_RUNTIME_API is set.
func (LambdaHost) Detect() bool { return InLambda() }

// startLambda starts the Lambda runtime; it does not return. Tests replace it.
var startLambda = func(ctx context.Context, handler any) {
	awslambda.StartWithOptions(handler, awslambda.WithContext(ctx))
}

// Run starts the Lambda runtime with the batch handler; it returns only if the runtime
// does (it exits the process), or a configuration error.
func (h LambdaHost) Run(ctx context.Context, handler sqsworker.Handler, settings Settings) error {
	env, err := readEnv(os.Getenv)
	if err != nil {
		return err
	}
	options := []lambda.Option{
		lambda.WithLogger(settings.Logger), lambda.WithBackoff(settings.Backoff),
		lambda.WithObserver(settings.Observer), lambda.WithErrorHandler(settings.ErrorHandler),
		lambda.WithDisableDeadLetterSend(settings.DisableDeadLetterSend),
	}
	if settings.Concurrency > 0 {
		options = append(options, lambda.WithConcurrency(settings.Concurrency))
	}
	if settings.SQSClient != nil {
		options = append(options, lambda.WithSQSClient(settings.SQSClient))
	}
	if env.deadlineMargin != nil {
		options = append(options, lambda.WithDeadlineMargin(*env.deadlineMargin))
	}
	if env.fifoMode != nil {
		options = append(options, lambda.WithFIFOMode(*env.fifoMode))
	}
	if env.entireBatchFailureError != nil {
		options = append(options, lambda.WithEntireBatchFailureError(*env.entireBatchFailureError))
	}
	if env.reportBatchItemFailures != nil {
		options = append(options, lambda.WithReportBatchItemFailures(*env.reportBatchItemFailures))
	}
	if env.faultThreshold != nil {
		options = append(options, lambda.WithInfrastructureFaultThreshold(*env.faultThreshold))
	}
	startLambda(ctx, lambda.NewBatchHandler(handler, append(options, h.Options...)...))
	return nil
}

// PollerHost runs the handler in the long-poll worker (package poller): in a container,
// on ECS, anywhere that is not Lambda. It detects itself always, so it comes last.
type PollerHost struct {
	// Config is the poller's configuration; zero fields are filled from Settings and the
	// environment (SQSWORKER_QUEUE_URL or _QUEUE_NAME, HANDLER_TIMEOUT, DRAIN_TIMEOUT,
	// STOP_TIMEOUT, HEALTH_ADDRESS, ALLOW_UNBOUNDED_RETRIES).
	Config poller.Config
	// OnStopped, if set, is called with the poller's counts after it stopped.
	OnStopped func(poller.Stats)
}

// Name returns "poller".
func (PollerHost) Name() string { return "poller" }

// Detect reports true: the poller runs anywhere.
func (PollerHost) Detect() bool { return true }

// Run runs the poller until a graceful drain (SIGTERM, SIGINT or ctx done).
func (h PollerHost) Run(ctx context.Context, handler sqsworker.Handler, settings Settings) error {
	env, err := readEnv(os.Getenv)
	if err != nil {
		return err
	}
	client := settings.SQSClient
	if client == nil {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return fmt.Errorf("worker: loading the AWS configuration: %w", err)
		}
		client = sqs.NewFromConfig(cfg)
	}
	config := env.fillPoller(h.Config, settings)
	if config.QueueURL == "" && len(config.Queues) == 0 && env.queueName != "" {
		output, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(env.queueName)})
		if err != nil {
			return fmt.Errorf("worker: looking up queue %s (%s): %w", env.queueName, EnvQueueName, err)
		}
		config.QueueURL = aws.ToString(output.QueueUrl)
	}
	if config.QueueURL == "" && len(config.Queues) == 0 {
		return fmt.Errorf("worker: no queue: set %s, %s or %s (or Options.Poller.QueueURL or Queues)", EnvQueueURL, EnvQueueName, EnvQueues)
	}
	server, err := poller.New(client, config, handler)
	if err != nil {
		return err
	}
	err = server.Run(ctx)
	if h.OnStopped != nil {
		h.OnStopped(server.Stats())
	}
	return err
}

// fillPoller fills config's zero fields from settings and the environment.
func (e environment) fillPoller(config poller.Config, settings Settings) poller.Config {
	if config.QueueURL == "" && len(config.Queues) == 0 {
		config.QueueURL = e.queueURL
		if config.QueueURL == "" {
			config.Queues = e.queues
		}
	}
	if config.Priority == poller.Weighted {
		config.Priority = e.priority
	}
	if config.Concurrency == 0 {
		config.Concurrency = settings.Concurrency
	}
	if config.HandlerTimeout == 0 {
		config.HandlerTimeout = e.handlerTimeout
	}
	if config.DrainTimeout == 0 {
		config.DrainTimeout = e.drainTimeout
	}
	if config.StopTimeout == 0 {
		config.StopTimeout = e.stopTimeout
	}
	if config.HealthCheckAddress == "" {
		config.HealthCheckAddress = e.healthAddress
	}
	if b := config.Backoff; b.Base == 0 && b.Cap == 0 && b.Jitter == sqsworker.JitterFull && b.Random == nil {
		config.Backoff = settings.Backoff
	}
	if config.Backoff.Base == 0 {
		config.Backoff.Base = settings.Backoff.Base
	}
	if config.Backoff.Cap == 0 {
		config.Backoff.Cap = settings.Backoff.Cap
	}
	if !config.AllowUnboundedRetries {
		config.AllowUnboundedRetries = e.allowUnboundedRetries
	}
	if !config.DisableDeadLetterSend {
		config.DisableDeadLetterSend = settings.DisableDeadLetterSend
	}
	if config.ErrorHandler == nil {
		config.ErrorHandler = settings.ErrorHandler
	}
	if config.Observer == nil {
		config.Observer = settings.Observer
	}
	if config.Logger == nil {
		config.Logger = settings.Logger
	}
	return config
}
