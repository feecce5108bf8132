package poller

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestConfigFromEnvironmentFillsTheZeroFields(t *testing.T) {
	config, err := ConfigFromEnvironment(context.Background(), nil, envOf(map[string]string{
		EnvQueueURL: "http://q", EnvHandlerTimeout: "30s", EnvDrainTimeout: "10s", EnvStopTimeout: "30s",
		EnvHealthAddress: "127.0.0.1:8080", EnvAllowUnboundedRetries: "true",
		"SQSWORKER_FIFO_MODE": "strict", "SQSWORKER_DEADLINE_MARGIN": "2", // the Lambda adapter's: not read here
	}), Config{HandlerTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{QueueURL: "http://q", HandlerTimeout: time.Minute, DrainTimeout: 10 * time.Second, StopTimeout: 30 * time.Second,
		HealthCheckAddress: "127.0.0.1:8080", AllowUnboundedRetries: true}
	if config.QueueURL != want.QueueURL || config.HandlerTimeout != want.HandlerTimeout || config.DrainTimeout != want.DrainTimeout ||
		config.StopTimeout != want.StopTimeout || config.HealthCheckAddress != want.HealthCheckAddress || !config.AllowUnboundedRetries {
		t.Errorf("config %+v, want %+v (the handler timeout set in code wins)", config, want)
	}
}

func TestConfigFromEnvironmentNamesEveryMalformedVariable(t *testing.T) {
	_, err := ConfigFromEnvironment(context.Background(), nil, envOf(map[string]string{
		EnvQueueURL: "http://q", EnvQueueName: "q", EnvHandlerTimeout: "soon", EnvDrainTimeout: "-1s",
		EnvStopTimeout: "30", EnvAllowUnboundedRetries: "maybe", EnvPriority: "fifo",
	}), Config{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{EnvQueueName, EnvHandlerTimeout, EnvDrainTimeout, EnvStopTimeout, EnvAllowUnboundedRetries, EnvPriority} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
	_, err = ConfigFromEnvironment(context.Background(), nil, envOf(map[string]string{EnvQueues: "http://a=0,=2"}), Config{})
	if err == nil || strings.Count(err.Error(), EnvQueues) != 2 {
		t.Errorf("error %v, want both malformed %s entries", err, EnvQueues)
	}
	_, err = ConfigFromEnvironment(context.Background(), nil, envOf(nil), Config{})
	if err == nil || !strings.Contains(err.Error(), "poller: no queue") || !strings.Contains(err.Error(), EnvQueueURL) {
		t.Errorf("error %v, want no queue, naming %s", err, EnvQueueURL)
	}
}

// TestConfigFromEnvironmentReadsSeveralQueues: SQSWORKER_QUEUES gives Config.Queues in
// order, weights defaulting to 1 (filled by New), and SQSWORKER_PRIORITY the priority.
func TestConfigFromEnvironmentReadsSeveralQueues(t *testing.T) {
	env := envOf(map[string]string{EnvQueues: "http://a=6, http://b", EnvPriority: "Strict"})
	config, err := ConfigFromEnvironment(context.Background(), nil, env, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(config.Queues) != 2 || config.Queues[0].URL != "http://a" || config.Queues[0].Weight != 6 || config.Queues[1].URL != "http://b" || config.Queues[1].Weight != 0 {
		t.Errorf("Queues = %+v, want http://a weight 6 and http://b", config.Queues)
	}
	if config.QueueURL != "" || config.Priority != Strict {
		t.Errorf("QueueURL %q, Priority %v; want none and strict", config.QueueURL, config.Priority)
	}
	// Queues set in code win over the environment.
	own := []QueueConfig{{URL: "http://own"}}
	if config, err := ConfigFromEnvironment(context.Background(), nil, env, Config{Queues: own}); err != nil || len(config.Queues) != 1 || config.Queues[0].URL != "http://own" {
		t.Errorf("Queues = %+v (%v), want the ones set in code", config.Queues, err)
	}
}

// TestConfigFromEnvironmentReadsTheStopTimeout: SQSWORKER_STOP_TIMEOUT (the container's
// stop timeout, which the Terraform module passes) becomes Config.StopTimeout, which
// bounds the drain; a value set in code wins.
func TestConfigFromEnvironmentReadsTheStopTimeout(t *testing.T) {
	env := envOf(map[string]string{EnvQueueURL: "http://q", EnvStopTimeout: "30s", EnvDrainTimeout: "60s"})
	if config, err := ConfigFromEnvironment(context.Background(), nil, env, Config{}); err != nil || config.StopTimeout != 30*time.Second || config.DrainTimeout != time.Minute {
		t.Errorf("StopTimeout %s, DrainTimeout %s (%v); want 30s and 1m0s (New lowers the drain to 25s, with a warning)", config.StopTimeout, config.DrainTimeout, err)
	}
	if config, err := ConfigFromEnvironment(context.Background(), nil, env, Config{StopTimeout: time.Minute}); err != nil || config.StopTimeout != time.Minute {
		t.Errorf("StopTimeout %s (%v), want the 1m0s set in code", config.StopTimeout, err)
	}
}

// TestConfigFromEnvironmentLooksUpTheQueueName: SQSWORKER_QUEUE_NAME is resolved with
// GetQueueUrl when nothing gives a URL, and not called for when code does.
func TestConfigFromEnvironmentLooksUpTheQueueName(t *testing.T) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	env := envOf(map[string]string{EnvQueueName: path.Base(queue.URL)})
	config, err := ConfigFromEnvironment(context.Background(), client, env, Config{})
	if err != nil || config.QueueURL != queue.URL {
		t.Fatalf("QueueURL %q (%v), want %s", config.QueueURL, err, queue.URL)
	}
	missing := envOf(map[string]string{EnvQueueName: "no-such-queue-" + path.Base(queue.URL)})
	if _, err := ConfigFromEnvironment(context.Background(), client, missing, Config{}); err == nil || !strings.Contains(err.Error(), EnvQueueName) {
		t.Errorf("error %v, want the failed lookup naming %s", err, EnvQueueName)
	}
	if config, err := ConfigFromEnvironment(context.Background(), nil, missing, Config{QueueURL: "http://own"}); err != nil || config.QueueURL != "http://own" {
		t.Errorf("QueueURL %q (%v), want the URL set in code, no lookup", config.QueueURL, err)
	}
}
