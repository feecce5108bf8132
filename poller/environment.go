package poller

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/hostsettings"
)

// The poller's environment variables, read by [ConfigFromEnvironment]. Durations are Go
// durations ("15s", "2m"). The settings both hosts share (SQSWORKER_CONCURRENCY, the
// backoff, the dead-letter send, the logger) are package worker's.
const (
	// EnvQueueURL is the queue's URL: Config.QueueURL.
	EnvQueueURL = "SQSWORKER_QUEUE_URL"
	// EnvQueueName is the queue's name, looked up with GetQueueUrl, instead of its URL.
	EnvQueueName = "SQSWORKER_QUEUE_NAME"
	// EnvQueues is several queues, one handler, one pool: comma-separated URL=weight
	// (weight optional, default 1), for Config.Queues.
	EnvQueues = "SQSWORKER_QUEUES"
	// EnvPriority is weighted (default) or strict, with EnvQueues: Config.Priority.
	EnvPriority = "SQSWORKER_PRIORITY"
	// EnvHandlerTimeout is the hard timeout of one message: Config.HandlerTimeout;
	// default 5m.
	EnvHandlerTimeout = "SQSWORKER_HANDLER_TIMEOUT"
	// EnvDrainTimeout is how long SIGTERM waits for running handlers:
	// Config.DrainTimeout; default SQSWORKER_STOP_TIMEOUT − 5s, else 25s.
	EnvDrainTimeout = "SQSWORKER_DRAIN_TIMEOUT"
	// EnvStopTimeout is how long the platform waits after SIGTERM before SIGKILL (ECS
	// stopTimeout, docker --stop-timeout): Config.StopTimeout; the drain ends 5s before
	// it and the process exits before it.
	EnvStopTimeout = "SQSWORKER_STOP_TIMEOUT"
	// EnvHealthAddress serves GET /healthz there: Config.HealthCheckAddress; default off.
	EnvHealthAddress = "SQSWORKER_HEALTH_ADDRESS"
	// EnvAllowUnboundedRetries, "true", accepts a queue without a redrive policy:
	// Config.AllowUnboundedRetries.
	EnvAllowUnboundedRetries = "SQSWORKER_ALLOW_UNBOUNDED_RETRIES"
)

// ConfigFromEnvironment returns config with its zero fields filled from the poller's
// variables (the Env constants), read through getenv (os.Getenv in a program): fields
// set in code win. When neither config nor SQSWORKER_QUEUE_URL or SQSWORKER_QUEUES
// names a queue, the queue named by SQSWORKER_QUEUE_NAME is looked up with client's
// GetQueueUrl (ctx bounds the call). It reads no other host's variables.
//
// Errors: every malformed variable at once, each naming its variable, before any call;
// then the failed lookup, or "poller: no queue" when nothing names one.
func ConfigFromEnvironment(ctx context.Context, client API, getenv func(string) string, config Config) (Config, error) {
	env := hostsettings.NewEnvironment("poller: ", getenv)
	queueURL, queueName, queuesText := env.Value(EnvQueueURL), env.Value(EnvQueueName), env.Value(EnvQueues)
	queues := parseQueues(env, queuesText)
	if set := countSet(queueURL != "", queueName != "", queuesText != ""); set > 1 {
		env.Problem("set only one of %s, %s and %s", EnvQueueURL, EnvQueueName, EnvQueues)
	}
	priority := Weighted
	switch text := strings.ToLower(env.Value(EnvPriority)); text {
	case "", Weighted.String():
	case Strict.String():
		priority = Strict
	default:
		env.Problem("%s=%q: want weighted or strict", EnvPriority, text)
	}
	handlerTimeout, _ := env.Duration(EnvHandlerTimeout)
	drainTimeout, _ := env.Duration(EnvDrainTimeout)
	stopTimeout, _ := env.Duration(EnvStopTimeout)
	allowUnboundedRetries, _ := env.Bool(EnvAllowUnboundedRetries)
	if err := env.Err(); err != nil {
		return config, err
	}

	if config.QueueURL == "" && len(config.Queues) == 0 {
		config.QueueURL = queueURL
		if config.QueueURL == "" {
			config.Queues = queues
		}
	}
	config.Priority = cmp.Or(config.Priority, priority)
	config.HandlerTimeout = cmp.Or(config.HandlerTimeout, handlerTimeout)
	config.DrainTimeout = cmp.Or(config.DrainTimeout, drainTimeout)
	config.StopTimeout = cmp.Or(config.StopTimeout, stopTimeout)
	config.HealthCheckAddress = cmp.Or(config.HealthCheckAddress, env.Value(EnvHealthAddress))
	config.AllowUnboundedRetries = config.AllowUnboundedRetries || allowUnboundedRetries

	if config.QueueURL == "" && len(config.Queues) == 0 && queueName != "" {
		output, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queueName)})
		if err != nil {
			return config, fmt.Errorf("poller: looking up queue %s (%s): %w", queueName, EnvQueueName, err)
		}
		config.QueueURL = aws.ToString(output.QueueUrl)
	}
	if config.QueueURL == "" && len(config.Queues) == 0 {
		return config, fmt.Errorf("poller: no queue: set %s, %s or %s (or Config.QueueURL or Config.Queues)", EnvQueueURL, EnvQueueName, EnvQueues)
	}
	return config, nil
}

// parseQueues reads SQSWORKER_QUEUES: comma-separated URL=weight, the weight optional.
func parseQueues(env *hostsettings.Environment, text string) []QueueConfig {
	if text == "" {
		return nil
	}
	var queues []QueueConfig
	for _, item := range strings.Split(text, ",") {
		item = strings.TrimSpace(item)
		url, weightText, hasWeight := strings.Cut(item, "=")
		queue := QueueConfig{URL: url}
		if hasWeight {
			weight, err := strconv.Atoi(weightText)
			if err != nil || weight < 1 {
				env.Problem("%s: %q has a weight that is not a positive whole number", EnvQueues, item)
				continue
			}
			queue.Weight = weight
		}
		if url == "" {
			env.Problem("%s: an entry has no queue URL (want URL=weight, comma-separated)", EnvQueues)
			continue
		}
		queues = append(queues, queue)
	}
	return queues
}

// countSet counts the true values.
func countSet(values ...bool) int {
	n := 0
	for _, v := range values {
		if v {
			n++
		}
	}
	return n
}
