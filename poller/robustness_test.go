package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// fakeWithMaxReceiveCount is newFakeAPI with the redrive policy's maxReceiveCount set.
func fakeWithMaxReceiveCount(count int) *fakeAPI {
	api := newFakeAPI()
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": fakeDLQARN, "maxReceiveCount": count})
	api.attributes["RedrivePolicy"] = string(policy)
	return api
}

func TestStartRefusesLowMaxReceiveCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		count    int
		allow    bool
		wantErr  bool
		wantWarn bool
	}{
		{1, false, true, false},
		{2, false, true, false},
		{2, true, false, true},
		{3, false, false, true},
		{4, false, false, true},
		{5, false, false, false},
	}
	for _, tc := range tests {
		api := fakeWithMaxReceiveCount(tc.count)
		logs := newLogRecorder()
		server, err := New(api, Config{QueueURL: fakeQueueURL, AllowLowMaxReceiveCount: tc.allow, Logger: slog.New(logs)}, nopHandler)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		err = server.Start(context.Background())
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "Config.AllowLowMaxReceiveCount") || !strings.Contains(err.Error(), "every receive counts") {
				t.Errorf("maxReceiveCount %d: Start error = %v; want a refusal naming Config.AllowLowMaxReceiveCount and the reason", tc.count, err)
			}
			if api.receiveCalls() != 0 {
				t.Errorf("maxReceiveCount %d: a refused server received", tc.count)
			}
		} else if err != nil {
			t.Errorf("maxReceiveCount %d (allow %v): Start: %v", tc.count, tc.allow, err)
		}
		warnings := logs.find(slog.LevelWarn, "poller: low maxReceiveCount: every receive counts toward it (a peek, a lost ReceiveMessage response, a crash), not only handler attempts, so a message may reach the dead-letter queue unhandled")
		if got := len(warnings) == 1; got != tc.wantWarn {
			t.Errorf("maxReceiveCount %d: %d warnings; want warning %v", tc.count, len(warnings), tc.wantWarn)
		}
		_ = server.Shutdown(canceledContext())
	}
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestNilLoggerUsesSlogDefault is not parallel: it replaces slog's default logger.
func TestNilLoggerUsesSlogDefault(t *testing.T) {
	logs := newLogRecorder()
	previous := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(previous) })
	server, err := New(newFakeAPI(), Config{QueueURL: fakeQueueURL}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := server.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	_ = server.Shutdown(canceledContext())
	if len(logs.find(slog.LevelInfo, "poller: started")) != 1 {
		t.Errorf("no \"poller: started\" log on slog.Default(); records: %v", logs.all())
	}
}

// TestRunReportsUnconfirmedDeletes: a delete SQS rejects for good makes Run return
// ErrDeletesNotConfirmed with the count, so the process does not exit 0.
func TestRunReportsUnconfirmedDeletes(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1), fakeMessage("m2", 1)})
	api.onDelete = func(_ int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
		output := &sqs.DeleteMessageBatchOutput{}
		for _, entry := range input.Entries {
			output.Failed = append(output.Failed, types.BatchResultErrorEntry{Id: entry.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
		}
		return output, nil
	}
	server, err := New(api, Config{QueueURL: fakeQueueURL, Logger: discardLogger()}, nopHandler)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- server.Run(ctx) }()
	eventually(t, "both delete failures counted", func() bool { return server.Stats().DeleteFailures == 2 })
	cancel()
	err = <-result
	if !errors.Is(err, ErrDeletesNotConfirmed) || !strings.Contains(err.Error(), "2 handled message(s)") {
		t.Errorf("Run = %v; want ErrDeletesNotConfirmed with the count 2", err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// pollHoldingAPI is fakeAPI whose ReceiveMessage, once the scripted batches are out,
// blocks (a long poll in flight) until release is closed.
type pollHoldingAPI struct {
	*fakeAPI
	release chan struct{}
}

func (f *pollHoldingAPI) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	scripted := len(f.batches) > 0
	f.mu.Unlock()
	if scripted {
		return f.fakeAPI.ReceiveMessage(ctx, input, optFns...)
	}
	select {
	case <-f.release:
		return &sqs.ReceiveMessageOutput{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestShutdownFlushesDeletesWhenHandlersFinish: with a 5 s DeleteFlushInterval and a
// long poll in flight, the delete of a message handled during the drain is sent as soon
// as the handler returns, not after the flush interval or the long poll.
func TestShutdownFlushesDeletesWhenHandlersFinish(t *testing.T) {
	t.Parallel()
	api := &pollHoldingAPI{fakeAPI: newFakeAPI([]types.Message{fakeMessage("m1", 1)}), release: make(chan struct{})}
	started, finish := make(chan struct{}), make(chan struct{})
	server := startServer(t, api, Config{DeleteFlushInterval: maxDeleteFlushInterval, Logger: discardLogger()}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		close(started)
		<-finish
		return nil
	}))
	<-started
	shutdown := make(chan error, 1)
	go func() { shutdown <- server.Shutdown(context.Background()) }()
	eventually(t, "the server is stopping", func() bool { return !server.running() })
	returned := time.Now()
	close(finish)
	// The acker's own timer cannot fire before DeleteFlushInterval (5 s) after the
	// delete was queued; a delete before that is the flush at the handlers' end.
	testenv.Eventually(t, maxDeleteFlushInterval-time.Second, "the delete sent while the long poll is still in flight", func() bool {
		deletes, _, _, _ := api.recorded()
		return len(deletes) == 1
	})
	if took := time.Since(returned); took >= maxDeleteFlushInterval {
		t.Errorf("delete sent %s after the handler returned; want before the %s flush interval", took, maxDeleteFlushInterval)
	}
	close(api.release)
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if stats := server.Stats(); stats.Deleted != 1 {
		t.Errorf("deleted = %d, want 1", stats.Deleted)
	}
}

// TestAbandonedHandlersDoNotStopReceiving (issue 9): handlers that ignore their
// cancelled context are counted and, up to Config.MaxAbandonedHandlers, give their slot
// back, so receiving goes on; once abandoned handlers hold every slot, /healthz answers
// 503 with the reason. When they finally return, each is logged, and the worker
// receives and handles again. Before, two stuck handlers held both slots and s3 was
// never received while /healthz answered 200.
func TestAbandonedHandlersDoNotStopReceiving(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("s1", 1), fakeMessage("s2", 1)}, []types.Message{fakeMessage("s3", 1)}, []types.Message{fakeMessage("ok1", 1)})
	stuck := make(chan struct{})
	logs := newLogRecorder()
	server := startServer(t, api, Config{Concurrency: 2, MaxAbandonedHandlers: 1, HandlerTimeout: 100 * time.Millisecond, HealthCheckAddress: "127.0.0.1:0", Logger: slog.New(logs)},
		sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
			if message.ID != "ok1" {
				<-stuck // ignores its context
			}
			return nil
		}))
	address := server.health.address()
	eventually(t, "three handlers abandoned (s3 received although s1 and s2 were stuck)", func() bool {
		return server.Stats().Abandoned == 3
	})
	eventually(t, "503 with the reason while abandoned handlers hold every slot", func() bool {
		err := CheckHealth(context.Background(), address)
		return err != nil && strings.Contains(err.Error(), "status 503: cannot receive: abandoned handlers (ignoring their cancelled context) hold all 2 concurrency slots")
	})
	if stats := server.Stats(); stats.AbandonedRunning != 3 || stats.Deleted != 0 {
		t.Errorf("stats = %+v; want 3 abandoned handlers running, nothing deleted yet", stats)
	}
	close(stuck)
	eventually(t, "ok1 handled and deleted after the abandoned handlers returned", func() bool { return server.Stats().Deleted == 1 })
	if err := CheckHealth(context.Background(), address); err != nil {
		t.Errorf("CheckHealth after the abandoned handlers returned: %v", err)
	}
	eventually(t, "each abandoned handler's return logged", func() bool {
		return len(logs.find(slog.LevelWarn, "poller: abandoned handler returned")) == 3
	})
	if stats := server.Stats(); stats.AbandonedRunning != 0 || stats.Abandoned != 3 {
		t.Errorf("stats = %+v; want 3 abandoned, none running", stats)
	}
}

// TestReceiveVisibilityDefault: each ReceiveMessage asks for the queue's visibility
// timeout, at most 30 s, unless Config.ReceiveVisibility says otherwise.
func TestReceiveVisibilityDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		queue, config time.Duration
		want          int32
	}{
		{200 * time.Second, 0, 30},
		{10 * time.Second, 0, 10},
		{200 * time.Second, 5 * time.Second, 5},
	} {
		api := newFakeAPI()
		api.attributes["VisibilityTimeout"] = strconv.Itoa(int(tc.queue / time.Second))
		server := startServer(t, api, Config{ReceiveVisibility: tc.config, Logger: discardLogger()}, nopHandler)
		eventually(t, "a receive", func() bool { return api.receiveCalls() > 0 })
		api.mu.Lock()
		got := api.receives[0].VisibilityTimeout
		api.mu.Unlock()
		if got != tc.want {
			t.Errorf("queue %s, Config.ReceiveVisibility %s: ReceiveMessage VisibilityTimeout = %d, want %d", tc.queue, tc.config, got, tc.want)
		}
		_ = server.Shutdown(canceledContext())
	}
	if _, err := New(newFakeAPI(), Config{QueueURL: fakeQueueURL, ReceiveVisibility: 1500 * time.Millisecond}, nopHandler); err == nil || !strings.Contains(err.Error(), "Config.ReceiveVisibility") {
		t.Errorf("New with ReceiveVisibility 1.5s: %v; want an error naming Config.ReceiveVisibility", err)
	}
}

// quotaRecordingAPI applies the per-call options of DeleteMessageBatch and
// ChangeMessageVisibilityBatch to a client's default options and keeps the retryers
// they end with.
type quotaRecordingAPI struct {
	*fakeAPI
	retryers chan aws.Retryer
}

func (f *quotaRecordingAPI) record(optFns []func(*sqs.Options)) {
	options := sqs.Options{Retryer: retry.NewStandard()} // the SDK's default: 500-token quota
	for _, fn := range optFns {
		fn(&options)
	}
	select {
	case f.retryers <- options.Retryer:
	default:
	}
}

func (f *quotaRecordingAPI) DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.record(optFns)
	return f.fakeAPI.DeleteMessageBatch(ctx, input, optFns...)
}

func (f *quotaRecordingAPI) ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.record(optFns)
	return f.fakeAPI.ChangeMessageVisibilityBatch(ctx, input, optFns...)
}

// TestDeleteAndHeartbeatRetryerHasNoQuota (N12, unit lane): the retryer the delete and
// heartbeat calls run with never answers ratelimit.QuotaExceededError, makes at most 3
// attempts, and waits a jittered 200 ms to 2 s between them. The SDK's default retryer
// runs dry after 100 retries of 5xx errors.
func TestDeleteAndHeartbeatRetryerHasNoQuota(t *testing.T) {
	t.Parallel()
	api := &quotaRecordingAPI{fakeAPI: newFakeAPI([]types.Message{fakeMessage("m1", 1)}), retryers: make(chan aws.Retryer, 16)}
	api.attributes["VisibilityTimeout"] = "3" // a heartbeat within 1.5 s
	release := make(chan struct{})
	startServer(t, api, Config{Logger: discardLogger()}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		<-release
		return nil
	}))
	heartbeat := <-api.retryers
	close(release)
	deleteRetryer := <-api.retryers
	serverError := &smithyErr{}
	for name, retryer := range map[string]aws.Retryer{"heartbeat": heartbeat, "delete": deleteRetryer, "SDK default (control)": retry.NewStandard()} {
		var quotaErr error
		for range 1000 {
			if _, err := retryer.GetRetryToken(context.Background(), serverError); err != nil {
				quotaErr = err
				break
			}
		}
		_, isQuota := errors.AsType[ratelimit.QuotaExceededError](quotaErr)
		if control := name == "SDK default (control)"; control != isQuota {
			t.Errorf("%s retryer: after up to 1000 retry tokens: %v", name, quotaErr)
		}
		if name == "SDK default (control)" {
			continue
		}
		if got := retryer.MaxAttempts(); got != 3 {
			t.Errorf("%s retryer: MaxAttempts = %d, want 3", name, got)
		}
		seen := map[time.Duration]bool{}
		for attempt := 1; attempt <= 3; attempt++ {
			for range 50 {
				delay, err := retryer.RetryDelay(attempt, serverError)
				if err != nil || delay < 200*time.Millisecond || delay > 2*time.Second {
					t.Fatalf("%s retryer: RetryDelay(%d) = %s, %v; want 200ms..2s", name, attempt, delay, err)
				}
				seen[delay] = true
			}
		}
		if len(seen) < 10 {
			t.Errorf("%s retryer: %d distinct delays in 150; want jitter", name, len(seen))
		}
	}
}

// smithyErr is an HTTP 500 InternalError as the SDK reports it.
type smithyErr struct{}

func (*smithyErr) Error() string                 { return "InternalError: 500" }
func (*smithyErr) ErrorCode() string             { return "InternalError" }
func (*smithyErr) ErrorMessage() string          { return "We encountered an internal error." }
func (*smithyErr) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }
func (*smithyErr) HTTPStatusCode() int           { return 500 }

// TestRetryQuotaFailureIsTransientAndNamed (N12): a handler error wrapping the SDK's
// ratelimit.QuotaExceededError is retried with Backoff (6 s fixed here) and logged with
// cause client_retry_quota; a service throttling error with cause throttled_by_service.
func TestRetryQuotaFailureIsTransientAndNamed(t *testing.T) {
	t.Parallel()
	api := newFakeAPI([]types.Message{fakeMessage("quota", 1), fakeMessage("throttled", 1)})
	logs := newLogRecorder()
	server := startServer(t, api, Config{Backoff: sqsworker.Backoff{Base: 6 * time.Second, Cap: 6 * time.Second, Jitter: sqsworker.JitterNone}, Logger: slog.New(logs)},
		sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
			if message.ID == "quota" {
				return fmt.Errorf("operation error DynamoDB: PutItem, failed to get rate limit token, %w", ratelimit.QuotaExceededError{Available: 3, Requested: 5})
			}
			return fmt.Errorf("operation error DynamoDB: PutItem: %w", &throttleErr{})
		}))
	eventually(t, "both rescheduled", func() bool {
		_, visibilities, _, _ := api.recorded()
		return len(visibilities) == 2 && server.Stats().InFlight == 0
	})
	_, visibilities, _, _ := api.recorded()
	for _, v := range visibilities {
		if v.VisibilityTimeout != 6 {
			t.Errorf("%s rescheduled to %d s, want the 6 s backoff", aws.ToString(v.ReceiptHandle), v.VisibilityTimeout)
		}
	}
	causes := map[string]string{}
	for _, record := range logs.find(slog.LevelError, "poller: handler failed") {
		causes[record.attrs["message_id"]] = record.attrs["cause"]
	}
	if causes["quota"] != "client_retry_quota" || causes["throttled"] != "throttled_by_service" {
		t.Errorf("causes = %v; want quota: client_retry_quota, throttled: throttled_by_service", causes)
	}
}

type throttleErr struct{}

func (*throttleErr) Error() string                 { return "ThrottlingException: Rate exceeded" }
func (*throttleErr) ErrorCode() string             { return "ThrottlingException" }
func (*throttleErr) ErrorMessage() string          { return "Rate exceeded" }
func (*throttleErr) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }
