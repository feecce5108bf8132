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
			EnvConcurrency: "4", EnvBackoffBase: "1s", EnvBackoffCap: "1m", EnvDeadLetterSend: "false",
			EnvLogFormat: "text", EnvLogLevel: "debug",
		}},
		{name: "every value malformed", env: map[string]string{
			EnvConcurrency: "0", EnvBackoffBase: "-1s", EnvBackoffCap: "soon", EnvDeadLetterSend: "maybe",
			EnvLogFormat: "xml", EnvLogLevel: "loud",
		}, want: []string{EnvConcurrency, EnvBackoffBase, EnvBackoffCap, EnvDeadLetterSend, EnvLogFormat, EnvLogLevel}},
		{name: "host variables are not read here", env: map[string]string{
			poller.EnvHandlerTimeout: "soon", poller.EnvQueues: "=0", lambda.EnvFIFOMode: "strict", lambda.EnvDeadlineMargin: "2",
		}},
	}
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
	t.Setenv(lambda.EnvEntireBatchFailureError, "true")
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
		t.Errorf("error %v, want %v (from %s)", err, lambda.ErrEntireBatchFailed, lambda.EnvEntireBatchFailureError)
	}
}

// TestAPollerVariableSetWrongDoesNotStopALambdaStart: a Lambda function reads only the
// Lambda adapter's variables, so malformed poller ones (left over in a shared
// configuration, say) do not keep it from starting.
func TestAPollerVariableSetWrongDoesNotStopALambdaStart(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "127.0.0.1:9001")
	for name, value := range map[string]string{
		poller.EnvQueueURL: "http://q", poller.EnvQueueName: "q", poller.EnvQueues: "=0", poller.EnvPriority: "fifo",
		poller.EnvHandlerTimeout: "soon", poller.EnvDrainTimeout: "-1s", poller.EnvStopTimeout: "30",
		poller.EnvAllowUnboundedRetries: "maybe",
	} {
		t.Setenv(name, value)
	}
	started := false
	original := startLambda
	startLambda = func(context.Context, any) { started = true }
	t.Cleanup(func() { startLambda = original })
	err := Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler), SQSClient: unusedSQS{}}})
	if err != nil || !started {
		t.Fatalf("Run: %v (runtime started: %t), want the Lambda runtime started", err, started)
	}
	// The same variables stop a poller, each named.
	t.Setenv(EnvRuntimeAPI, "")
	err = Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler), SQSClient: unusedSQS{}}})
	for _, name := range []string{poller.EnvQueues, poller.EnvPriority, poller.EnvHandlerTimeout, poller.EnvDrainTimeout, poller.EnvStopTimeout, poller.EnvAllowUnboundedRetries} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("poller error %v, want one naming %s", err, name)
		}
	}
}

// TestALambdaVariableSetWrongDoesNotStopAPoller: the long-poll worker reads only the
// poller's variables, so malformed Lambda ones do not keep it from consuming.
func TestALambdaVariableSetWrongDoesNotStopAPoller(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	for name, value := range map[string]string{
		lambda.EnvDeadlineMargin: "2", lambda.EnvFIFOMode: "strict", lambda.EnvEntireBatchFailureError: "yes please",
		lambda.EnvReportBatchItemFailures: "nope", lambda.EnvInfrastructureFaultThreshold: "-1",
	} {
		t.Setenv(name, value)
	}
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	t.Setenv(poller.EnvQueueURL, queue.URL)
	if stats := runPollerUntilDrained(t, client, []string{queue.URL}, "a"); stats.Deleted != 1 {
		t.Errorf("poller stats: %d deleted, want 1", stats.Deleted)
	}
	// The same variables stop a Lambda function, each named.
	t.Setenv(EnvRuntimeAPI, "127.0.0.1:9001")
	err := Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		Options{Settings: Settings{Logger: slog.New(slog.DiscardHandler), SQSClient: unusedSQS{}}})
	for _, name := range []string{lambda.EnvDeadlineMargin, lambda.EnvFIFOMode, lambda.EnvEntireBatchFailureError, lambda.EnvReportBatchItemFailures, lambda.EnvInfrastructureFaultThreshold} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Lambda error %v, want one naming %s", err, name)
		}
	}
}

// TestRunPoller: without AWS_LAMBDA_RUNTIME_API, Run starts the long-poll worker on the
// queue named by SQSWORKER_QUEUE_URL and returns nil after a graceful stop.
func TestRunPoller(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	t.Setenv(poller.EnvQueueURL, queue.URL)
	if stats := runPollerUntilDrained(t, client, []string{queue.URL}, "a", "b", "c"); stats.Deleted != 3 {
		t.Errorf("poller stats: %d deleted, want 3", stats.Deleted)
	}
}

// TestRunPollerSeveralQueues: SQSWORKER_QUEUES makes Run consume every queue listed.
func TestRunPollerSeveralQueues(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	t.Setenv(poller.EnvQueueURL, "")
	t.Setenv(poller.EnvQueueName, "")
	client := testenv.SQS(t)
	first := testenv.NewQueue(t, client, testenv.QueueOptions{})
	second := testenv.NewQueue(t, client, testenv.QueueOptions{})
	t.Setenv(poller.EnvQueues, first.URL+"=3,"+second.URL)
	if stats := runPollerUntilDrained(t, client, []string{first.URL, second.URL}, "x"); stats.Deleted != 2 {
		t.Errorf("poller stats: %d deleted, want 2", stats.Deleted)
	}
}

// runPollerUntilDrained sends bodies to each of urls, runs Run (as the long-poll worker,
// configured by the environment) until every message is handled and deleted, stops it
// and returns the poller's counts. Run must return nil after the graceful stop.
func runPollerUntilDrained(t *testing.T, client *sqs.Client, urls []string, bodies ...string) poller.Stats {
	t.Helper()
	for _, url := range urls {
		for _, body := range bodies {
			if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := int32(len(urls) * len(bodies))
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
	testenv.Eventually(t, 20*time.Second, "every message handled and deleted", func() bool {
		left := 0
		for _, url := range urls {
			visible, inFlight := testenv.Counts(t, client, url)
			left += visible + inFlight
		}
		return handled.Load() == want && left == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return stats
}

func TestRunPollerWithoutQueue(t *testing.T) {
	t.Setenv(EnvRuntimeAPI, "")
	t.Setenv(poller.EnvQueueURL, "")
	t.Setenv(poller.EnvQueueName, "")
	err := Run(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		Options{Settings: Settings{SQSClient: testenv.SQS(t)}})
	if err == nil || !strings.Contains(err.Error(), poller.EnvQueueURL) {
		t.Fatalf("error %v, want one naming %s", err, poller.EnvQueueURL)
	}
}

// unusedSQS is a client whose methods are never called: Run stops before any call.
type unusedSQS struct{ SQSAPI }

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
