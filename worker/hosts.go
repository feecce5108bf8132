package worker

import (
	"cmp"
	"context"
	"fmt"
	"os"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
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
// does (it exits the process), or a configuration error. It reads the Lambda adapter's
// variables (lambda.OptionsFromEnvironment) and no poller variable.
func (h LambdaHost) Run(ctx context.Context, handler sqsworker.Handler, settings Settings) error {
	options, err := lambda.OptionsFromEnvironment(os.Getenv)
	if err != nil {
		return err
	}
	options = append(options,
		lambda.WithLogger(settings.Logger), lambda.WithBackoff(settings.Backoff),
		lambda.WithObserver(settings.Observer), lambda.WithErrorHandler(settings.ErrorHandler),
		lambda.WithDisableDeadLetterSend(settings.DisableDeadLetterSend),
	)
	if settings.Concurrency > 0 {
		options = append(options, lambda.WithConcurrency(settings.Concurrency))
	}
	if settings.SQSClient != nil {
		options = append(options, lambda.WithSQSClient(settings.SQSClient))
	}
	batch, err := lambda.NewBatchHandler(handler, append(options, h.Options...)...)
	if err != nil {
		return err
	}
	startLambda(ctx, batch.Handle)
	return nil
}

// PollerHost runs the handler in the long-poll worker (package poller): in a container,
// on ECS, anywhere that is not Lambda. It detects itself always, so it comes last.
type PollerHost struct {
	// Config is the poller's configuration; zero fields are filled from Settings and the
	// poller's variables (poller.ConfigFromEnvironment).
	Config poller.Config
	// OnStopped, if set, is called with the poller's counts after it stopped.
	OnStopped func(poller.Stats)
}

// Name returns "poller".
func (PollerHost) Name() string { return "poller" }

// Detect reports true: the poller runs anywhere.
func (PollerHost) Detect() bool { return true }

// Run runs the poller until a graceful drain (SIGTERM, SIGINT or ctx done). It reads the
// poller's variables (poller.ConfigFromEnvironment) and no Lambda variable.
func (h PollerHost) Run(ctx context.Context, handler sqsworker.Handler, settings Settings) error {
	client := settings.SQSClient
	if client == nil {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return fmt.Errorf("worker: loading the AWS configuration: %w", err)
		}
		client = sqs.NewFromConfig(cfg)
	}
	config, err := poller.ConfigFromEnvironment(ctx, client, os.Getenv, withSettings(h.Config, settings))
	if err != nil {
		return err
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

// withSettings fills config's zero shared fields from settings.
func withSettings(config poller.Config, settings Settings) poller.Config {
	config.Concurrency = cmp.Or(config.Concurrency, settings.Concurrency)
	config.Backoff = hostsettings.FillBackoff(config.Backoff, settings.Backoff)
	config.DisableDeadLetterSend = config.DisableDeadLetterSend || settings.DisableDeadLetterSend
	if config.ErrorHandler == nil {
		config.ErrorHandler = settings.ErrorHandler
	}
	if config.Observer == nil {
		config.Observer = settings.Observer
	}
	config.Logger = cmp.Or(config.Logger, settings.Logger)
	return config
}
