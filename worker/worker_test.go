package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/poller"
)

func TestReadEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want []string // variables named in the error; none for a valid environment
	}{
		{name: "empty"},
		{name: "all valid", env: map[string]string{
			EnvQueueURL: "http://q", EnvConcurrency: "4", EnvHandlerTimeout: "30s", EnvDrainTimeout: "10s",
			EnvBackoffBase: "1s", EnvBackoffCap: "1m", EnvDeadlineMargin: "3s", EnvFIFOMode: "stop-at-first-failure",
			EnvEntireBatchFailureError: "true", EnvReportBatchItemFailures: "false", EnvLogFormat: "text", EnvLogLevel: "debug",
			EnvFaultThreshold: "3", EnvStopTimeout: "30s",
		}},
		{name: "every value malformed", env: map[string]string{
			EnvQueueURL: "http://q", EnvQueueName: "q", EnvConcurrency: "0", EnvHandlerTimeout: "soon", EnvBackoffBase: "-1s",
			EnvDeadlineMargin: "2", EnvFIFOMode: "strict", EnvEntireBatchFailureError: "yes please",
			EnvAllowUnboundedRetries: "maybe", EnvLogFormat: "xml", EnvLogLevel: "loud", EnvFaultThreshold: "-1",
			EnvStopTimeout: "30",
		}, want: []string{EnvQueueName, EnvConcurrency, EnvHandlerTimeout, EnvBackoffBase, EnvDeadlineMargin, EnvFIFOMode,
			EnvEntireBatchFailureError, EnvAllowUnboundedRetries, EnvLogFormat, EnvLogLevel, EnvFaultThreshold, EnvStopTimeout}},
	}
	tests = append(tests,
		struct {
			name string
			env  map[string]string
			want []string
		}{name: "queues valid", env: map[string]string{EnvQueues: "http://a=6, http://b=3,http://c", EnvPriority: "strict"}},
		struct {
			name string
			env  map[string]string
			want []string
		}{name: "queues malformed", env: map[string]string{EnvQueues: "http://a=0,=2", EnvQueueURL: "http://q", EnvPriority: "fifo"}, want: []string{EnvQueues, EnvPriority, EnvQueueURL}},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readEnv(func(name string) string { return tc.env[name] })
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, name := range tc.want {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error does not name %s:\n%v", name, err)
				}
			}
		})
	}
}

// TestRunInLambda: with AWS_LAMBDA_RUNTIME_API set, Run starts the Lambda runtime with
// the batch handler, configured from the environment.
func TestRunInLambda(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "127.0.0.1:9001")
	t.Setenv(EnvEntireBatchFailureError, "true")
	var started any
	original := startLambda
	startLambda = func(_ context.Context, handler any) { started = handler }
	t.Cleanup(func() { startLambda = original })

	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return errors.New("downstream 503") })
	if err := Run(context.Background(), handler, Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler)}, Lambda: []lambda.Option{lambda.WithSQSClient(discardSQS{})}}); err != nil {
		t.Fatal(err)
	}
	batchHandler, ok := started.(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error))
	if !ok {
		t.Fatalf("Lambda runtime started with %T, want the batch handler", started)
	}
	event := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "{}", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:q"}}}
	if _, err := batchHandler(context.Background(), event); !errors.Is(err, lambda.ErrEntireBatchFailed) {
		t.Errorf("error %v, want %v (from %s)", err, lambda.ErrEntireBatchFailed, EnvEntireBatchFailureError)
	}
}

// TestRunPoller: without AWS_LAMBDA_RUNTIME_API, Run starts the long-poll worker on the
// queue named by SQSWORKER_QUEUE_URL and returns nil after a graceful stop.
func TestRunPoller(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	t.Setenv(EnvQueueURL, queue.URL)
	for _, body := range []string{"a", "b", "c"} {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var handled atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var stats poller.Stats
	go func() {
		done <- Run(ctx, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			handled.Add(1)
			return nil
		}), Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler)}, Poller: poller.Config{WaitTime: time.Second}, OnPollerStopped: func(s poller.Stats) { stats = s }})
	}()
	testenv.Eventually(t, 20*time.Second, "three messages handled and deleted", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return handled.Load() == 3 && visible+inFlight == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if stats.Deleted != 3 {
		t.Errorf("poller stats: %d deleted, want 3", stats.Deleted)
	}
}

// TestParseQueues: SQSWORKER_QUEUES gives Config.Queues in order, weights defaulting
// to 1 (filled by poller), and SQSWORKER_PRIORITY the priority.
func TestParseQueues(t *testing.T) {
	t.Parallel()
	env, err := readEnv(func(name string) string {
		return map[string]string{EnvQueues: "http://a=6, http://b", EnvPriority: "Strict"}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	config := env.fillPoller(poller.Config{}, Settings{})
	if len(config.Queues) != 2 || config.Queues[0].URL != "http://a" || config.Queues[0].Weight != 6 || config.Queues[1].URL != "http://b" || config.Queues[1].Weight != 0 {
		t.Errorf("Queues = %+v, want http://a weight 6 and http://b", config.Queues)
	}
	if config.QueueURL != "" || config.Priority != poller.Strict {
		t.Errorf("QueueURL %q, Priority %v; want none and strict", config.QueueURL, config.Priority)
	}
	// Options.Poller.Queues set in code win over the environment.
	own := []poller.QueueConfig{{URL: "http://own"}}
	if config := env.fillPoller(poller.Config{Queues: own}, Settings{}); len(config.Queues) != 1 || config.Queues[0].URL != "http://own" {
		t.Errorf("Queues = %+v, want the ones set in code", config.Queues)
	}
}

// TestStopTimeoutFromTheEnvironment: SQSWORKER_STOP_TIMEOUT (the container's stop
// timeout, which the Terraform module passes) becomes poller.Config.StopTimeout, which
// bounds the drain; a value set in code wins.
func TestStopTimeoutFromTheEnvironment(t *testing.T) {
	t.Parallel()
	env, err := readEnv(func(name string) string {
		return map[string]string{EnvStopTimeout: "30s", EnvDrainTimeout: "60s"}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	if config := env.fillPoller(poller.Config{}, Settings{}); config.StopTimeout != 30*time.Second || config.DrainTimeout != time.Minute {
		t.Errorf("StopTimeout %s, DrainTimeout %s; want 30s and 1m0s (poller.New lowers the drain to 25s, with a warning)", config.StopTimeout, config.DrainTimeout)
	}
	if config := env.fillPoller(poller.Config{StopTimeout: time.Minute}, Settings{}); config.StopTimeout != time.Minute {
		t.Errorf("StopTimeout %s, want the 1m0s set in code", config.StopTimeout)
	}
}

// TestRunPollerSeveralQueues: SQSWORKER_QUEUES makes Run consume every queue listed.
func TestRunPollerSeveralQueues(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	t.Setenv(EnvQueueURL, "")
	t.Setenv(EnvQueueName, "")
	client := testenv.SQS(t)
	first := testenv.NewQueue(t, client, testenv.QueueOptions{})
	second := testenv.NewQueue(t, client, testenv.QueueOptions{})
	t.Setenv(EnvQueues, first.URL+"=3,"+second.URL)
	for _, url := range []string{first.URL, second.URL} {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var handled atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
			handled.Add(1)
			return nil
		}), Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler)}, Poller: poller.Config{WaitTime: time.Second}})
	}()
	testenv.Eventually(t, 20*time.Second, "both messages handled and deleted", func() bool {
		a, aFlight := testenv.Counts(t, client, first.URL)
		b, bFlight := testenv.Counts(t, client, second.URL)
		return handled.Load() == 2 && a+aFlight+b+bFlight == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestRunPollerWithoutQueue(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	t.Setenv(EnvQueueURL, "")
	t.Setenv(EnvQueueName, "")
	err := Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		Options{Settings: Settings{SQSClient: testenv.SQS(t)}})
	if err == nil || !strings.Contains(err.Error(), EnvQueueURL) {
		t.Fatalf("error %v, want one naming %s", err, EnvQueueURL)
	}
}

// discardSQS answers every call the adapter makes with success.
type discardSQS struct{ lambda.SQSAPI }

func (discardSQS) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

// GetQueueAttributes answers a queue without a redrive policy (read to tell a record's
// last attempt).
func (discardSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"VisibilityTimeout": "30"}}, nil
}

// fakeHost is a third host: Run takes it through the Host interface alone.
type fakeHost struct {
	detect bool
	got    *Settings
}

func (fakeHost) Name() string   { return "fake" }
func (h fakeHost) Detect() bool { return h.detect }
func (h fakeHost) Run(_ context.Context, _ sqsworker.Handler, settings Settings) error {
	*h.got = settings
	return nil
}

// TestRunPicksTheFirstHostThatDetectsItself: a host is one value in Options.Hosts, and
// every host gets the same settings, filled from the environment.
func TestRunPicksTheFirstHostThatDetectsItself(t *testing.T) {
	t.Setenv(EnvConcurrency, "7")
	t.Setenv(EnvBackoffBase, "3s")
	t.Setenv(EnvDeadLetterSend, "false")
	var skipped, picked Settings
	observer := sqsworker.ObserverFunc(func(context.Context, sqsworker.Event) {})
	err := Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), Options{
		Settings: Settings{Observer: observer, Backoff: sqsworker.Backoff{Cap: time.Minute}},
		Hosts:    []Host{fakeHost{detect: false, got: &skipped}, fakeHost{detect: true, got: &picked}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if skipped.Logger != nil {
		t.Error("a host that did not detect itself was run")
	}
	if picked.Concurrency != 7 || picked.Backoff.Base != 3*time.Second || picked.Backoff.Cap != time.Minute ||
		!picked.DisableDeadLetterSend || picked.Observer == nil || picked.Logger == nil {
		t.Errorf("settings = %+v, want concurrency 7, backoff 3s..1m, dead-letter send off, the observer and a logger", picked)
	}
	err = Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }), Options{
		Hosts: []Host{fakeHost{detect: false, got: &skipped}},
	})
	if err == nil || !strings.Contains(err.Error(), "fake") {
		t.Errorf("error %v, want one naming the hosts tried", err)
	}
}
