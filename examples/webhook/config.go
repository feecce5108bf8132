package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Environment variable names (see the package comment).
const (
	envQueueURL         = "SQSWORKER_QUEUE_URL"
	envQueueName        = "SQSWORKER_QUEUE_NAME"
	envTable            = "SQSWORKER_IDEMPOTENCY_TABLE"
	envConcurrency      = "SQSWORKER_CONCURRENCY"
	envHandlerTimeout   = "SQSWORKER_HANDLER_TIMEOUT"
	envDrainTimeout     = "SQSWORKER_DRAIN_TIMEOUT"
	envHealthAddress    = "SQSWORKER_HEALTH_ADDRESS"
	envDeliveryTimeout  = "SQSWORKER_DELIVERY_TIMEOUT"
	envLogFormat        = "SQSWORKER_LOG_FORMAT"
	envLogLevel         = "SQSWORKER_LOG_LEVEL"
	defaultHandlerLimit = 15 * time.Second
)

// config is the worker's configuration, read from the environment.
type config struct {
	QueueURL        string
	QueueName       string
	Table           string
	Concurrency     int           // 0: the poller's default
	HandlerTimeout  time.Duration // also the idempotency lease
	DrainTimeout    time.Duration // 0: the poller's default
	HealthAddress   string
	DeliveryTimeout time.Duration // 0: the delivery package's default
	LogFormat       string        // "json" or "text"
	LogLevel        slog.Level
}

// loadConfig reads the configuration with getenv (os.Getenv in main) and reports every
// problem at once.
func loadConfig(getenv func(string) string) (config, error) {
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	duration := func(name string, fallback time.Duration) time.Duration {
		text := strings.TrimSpace(getenv(name))
		if text == "" {
			return fallback
		}
		value, err := time.ParseDuration(text)
		if err != nil || value <= 0 {
			add("%s=%q is not a positive duration such as 15s or 2m", name, text)
			return fallback
		}
		return value
	}
	c := config{
		QueueURL:        strings.TrimSpace(getenv(envQueueURL)),
		QueueName:       strings.TrimSpace(getenv(envQueueName)),
		Table:           strings.TrimSpace(getenv(envTable)),
		HandlerTimeout:  duration(envHandlerTimeout, defaultHandlerLimit),
		DrainTimeout:    duration(envDrainTimeout, 0),
		HealthAddress:   strings.TrimSpace(getenv(envHealthAddress)),
		DeliveryTimeout: duration(envDeliveryTimeout, 0),
		LogFormat:       strings.ToLower(strings.TrimSpace(getenv(envLogFormat))),
	}
	switch {
	case c.QueueURL == "" && c.QueueName == "":
		add("set %s, or %s to look the URL up", envQueueURL, envQueueName)
	case c.QueueURL != "" && c.QueueName != "":
		add("set only one of %s and %s", envQueueURL, envQueueName)
	}
	if c.Table == "" {
		add("%s is empty; the worker needs the idempotency table", envTable)
	}
	if text := strings.TrimSpace(getenv(envConcurrency)); text != "" {
		value, err := strconv.Atoi(text)
		if err != nil || value < 1 {
			add("%s=%q is not a positive whole number", envConcurrency, text)
		}
		c.Concurrency = value
	}
	switch c.LogFormat {
	case "":
		c.LogFormat = "json"
	case "json", "text":
	default:
		add("%s=%q is neither json nor text", envLogFormat, c.LogFormat)
	}
	if text := strings.TrimSpace(getenv(envLogLevel)); text != "" {
		if err := c.LogLevel.UnmarshalText([]byte(text)); err != nil {
			add("%s=%q is not one of debug, info, warn, error", envLogLevel, text)
		}
	}
	if c.DeliveryTimeout > 0 && c.DeliveryTimeout >= c.HandlerTimeout {
		add("%s (%s) must be shorter than %s (%s)", envDeliveryTimeout, c.DeliveryTimeout, envHandlerTimeout, c.HandlerTimeout)
	}
	return c, errors.Join(problems...)
}
