package poller

// Tests against the local SQS emulator (LocalStack; see internal/testing/testenv). Each runs in
// parallel with the others on its own queues.

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// recordingClient wraps the emulator's client and records the calls that matter to
// these tests. Embedding keeps Options(), so New still inspects the HTTP client.
type recordingClient struct {
	*sqs.Client

	mu             sync.Mutex
	receiveStarts  []time.Time
	receiveInputs  []sqs.ReceiveMessageInput
	receiveErrors  []error
	visibilityEdit []visibilityEdit
}

// visibilityEdit is one ChangeMessageVisibility call or batch entry.
type visibilityEdit struct {
	at      time.Time
	receipt string
	seconds int32
	// failed is set when the edit did not take effect, for either reason below.
	failed bool
	// refused is set when SQS answered and refused this entry (for example an invalid
	// receipt handle); callFailed when the whole call returned an error (a timeout
	// under load, a network error), which the poller retries.
	refused, callFailed bool
}

func (c *recordingClient) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.mu.Lock()
	c.receiveStarts = append(c.receiveStarts, time.Now())
	c.receiveInputs = append(c.receiveInputs, *input)
	c.mu.Unlock()
	output, err := c.Client.ReceiveMessage(ctx, input, optFns...)
	if err != nil && ctx.Err() == nil {
		c.mu.Lock()
		c.receiveErrors = append(c.receiveErrors, err)
		c.mu.Unlock()
	}
	return output, err
}

func (c *recordingClient) ChangeMessageVisibility(ctx context.Context, input *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	at := time.Now()
	output, err := c.Client.ChangeMessageVisibility(ctx, input, optFns...)
	c.mu.Lock()
	c.visibilityEdit = append(c.visibilityEdit, visibilityEdit{at: at, receipt: aws.ToString(input.ReceiptHandle), seconds: input.VisibilityTimeout, failed: err != nil, callFailed: err != nil})
	c.mu.Unlock()
	return output, err
}

func (c *recordingClient) ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	at := time.Now()
	output, err := c.Client.ChangeMessageVisibilityBatch(ctx, input, optFns...)
	failed := map[string]bool{}
	if output != nil {
		for _, entry := range output.Failed {
			failed[aws.ToString(entry.Id)] = true
		}
	}
	c.mu.Lock()
	for _, entry := range input.Entries {
		refused := err == nil && failed[aws.ToString(entry.Id)]
		c.visibilityEdit = append(c.visibilityEdit, visibilityEdit{
			at: at, receipt: aws.ToString(entry.ReceiptHandle), seconds: entry.VisibilityTimeout,
			failed: err != nil || refused, refused: refused, callFailed: err != nil,
		})
	}
	c.mu.Unlock()
	return output, err
}

// edits returns the visibility changes made for receipt.
func (c *recordingClient) edits(receipt string) []visibilityEdit {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []visibilityEdit
	for _, edit := range c.visibilityEdit {
		if edit.receipt == receipt {
			found = append(found, edit)
		}
	}
	return found
}

func sendMessage(t *testing.T, client *sqs.Client, queueURL, body string, group string) {
	t.Helper()
	input := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}
	if group != "" {
		input.MessageGroupId = aws.String(group)
	}
	if _, err := client.SendMessage(context.Background(), input); err != nil {
		t.Fatalf("sending %s: %v", body, err)
	}
}

// handlerCall is one recorded handler call.
type handlerCall struct {
	at           time.Time
	body         string
	receiveCount int
	receipt      string
}

// callLog records handler calls.
type callLog struct {
	mu    sync.Mutex
	calls []handlerCall
}

func (l *callLog) add(message *sqsworker.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, handlerCall{time.Now(), message.Body, message.ReceiveCount, message.ReceiptHandle})
}

func (l *callLog) all() []handlerCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]handlerCall(nil), l.calls...)
}

func visibleCount(t *testing.T, client *sqs.Client, queueURL string) int {
	visible, _ := testenv.Counts(t, client, queueURL)
	return visible
}

// TestEmulatorFailingMessageReachesDeadLetterQueueAfterMaxReceiveCount: a message whose
// every attempt fails is handled maxReceiveCount (3) times. After the last failed
// attempt the worker sends it to the dead-letter queue itself, with reason
// RetriesExhausted, the last error and its original message id, and deletes it (on a
// FIFO queue too, keeping its group). With the dead-letter send disabled, or refused
// (AccessDenied through the fault proxy), SQS's redrive policy moves it at its fourth
// receive, as before: the original message, without failure attributes. Before, every
// variant was the redrive policy's move, so the copy carried no reason.
func TestEmulatorFailingMessageReachesDeadLetterQueueAfterMaxReceiveCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		fifo         bool
		disableSend  bool
		refuseSend   bool
		wantAttrs    bool
		wantDeadStat int64
	}{
		{name: "sent by the worker", wantAttrs: true, wantDeadStat: 1},
		{name: "fifo: sent by the worker", fifo: true, wantAttrs: true, wantDeadStat: 1},
		{name: "send disabled: the redrive policy moves it", disableSend: true},
		{name: "send refused: the redrive policy moves it", refuseSend: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := testenv.SQS(t)
			client, proxy := proxiedSQS(t)
			if tc.refuseSend {
				proxy.SetRules(faultproxy.Rule{Operations: []string{"SendMessage"}, Fraction: 1, Status: 400, Code: "AccessDenied",
					Message: "User is not authorized to perform: sqs:sendmessage"})
			}
			queue := testenv.NewQueue(t, direct, testenv.QueueOptions{MaxReceiveCount: 3, FIFO: tc.fifo})
			group := ""
			if tc.fifo {
				group = "g1"
			}
			sent, err := direct.SendMessage(context.Background(), sendInput(queue.URL, "always-fails", group))
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			server := startServer(t, client, Config{
				QueueURL:              queue.URL,
				WaitTime:              time.Second,
				DisableDeadLetterSend: tc.disableSend,
				Backoff:               sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone},
			}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				calls.Add(1)
				return errors.New("always fails")
			}))
			received := testenv.Receive(t, direct, sqs.ReceiveMessageInput{
				QueueUrl:              aws.String(queue.DeadLetterQueueURL),
				MessageAttributeNames: []string{"All"},
			}, 1, 30*time.Second)
			if len(received) != 1 {
				t.Fatalf("dead-letter queue holds %d messages, want 1", len(received))
			}
			dead := received[0]
			if got := calls.Load(); got != 3 {
				t.Errorf("handler called %d times, want maxReceiveCount = 3", got)
			}
			attributes := map[string]string{}
			for name, value := range dead.MessageAttributes {
				attributes[name] = aws.ToString(value.StringValue)
			}
			if tc.wantAttrs {
				want := map[string]string{
					sqsworker.AttributeFailureReason:       sqsworker.ReasonRetriesExhausted,
					sqsworker.AttributeFailureMessageID:    aws.ToString(sent.MessageId),
					sqsworker.AttributeFailureError:        "always fails",
					sqsworker.AttributeFailureSourceQueue:  queue.ARN,
					sqsworker.AttributeFailureReceiveCount: "3",
				}
				if !maps.Equal(attributes, want) {
					t.Errorf("dead-letter attributes %v, want %v", attributes, want)
				}
			} else {
				if len(attributes) != 0 || aws.ToString(dead.MessageId) != aws.ToString(sent.MessageId) {
					t.Errorf("dead-letter copy %s with attributes %v, want the original %s moved by SQS, without attributes", aws.ToString(dead.MessageId), attributes, aws.ToString(sent.MessageId))
				}
			}
			testenv.Eventually(t, 10*time.Second, "the source queue empty", func() bool {
				visible, inFlight := testenv.Counts(t, direct, queue.URL)
				return visible+inFlight == 0 && server.Stats().InFlight == 0
			})
			if stats := server.Stats(); stats.Failed != 3 || stats.DeadLettered != tc.wantDeadStat || stats.Deleted != tc.wantDeadStat {
				t.Errorf("stats = %+v, want 3 failed attempts and %d dead-lettered and deleted", stats, tc.wantDeadStat)
			}
		})
	}
}

// sendInput is a SendMessage of body to queueURL, in group on a FIFO queue (deduplicated
// by body).
func sendInput(queueURL, body, group string) *sqs.SendMessageInput {
	input := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}
	if group != "" {
		input.MessageGroupId = aws.String(group)
		input.MessageDeduplicationId = aws.String(body)
	}
	return input
}

func TestEmulatorPermanentErrorDeadLettersAfterOneCall(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 3})
	sent, err := client.SendMessage(context.Background(), sendInput(queue.URL, "not json", ""))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	server := startServer(t, client, Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		calls.Add(1)
		return sqsworker.Permanent("MalformedBody", errors.New("invalid character 'o' in literal null"))
	}))
	testenv.Eventually(t, 20*time.Second, "the message deleted from the source queue", func() bool {
		return server.Stats().Deleted == 1
	})
	received := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(queue.DeadLetterQueueURL),
		MessageAttributeNames: []string{"All"},
	}, 1, testenv.ReceiveTimeout)
	if len(received) != 1 {
		t.Fatalf("dead-letter queue holds %d messages, want 1", len(received))
	}
	dead := received[0]
	want := map[string]string{
		sqsworker.AttributeFailureReason:       "MalformedBody",
		sqsworker.AttributeFailureMessageID:    aws.ToString(sent.MessageId),
		sqsworker.AttributeFailureError:        "permanent failure (MalformedBody): invalid character 'o' in literal null",
		sqsworker.AttributeFailureSourceQueue:  queue.ARN,
		sqsworker.AttributeFailureReceiveCount: "1",
	}
	for name, value := range want {
		if got := aws.ToString(dead.MessageAttributes[name].StringValue); got != value {
			t.Errorf("attribute %s = %q, want %q", name, got, value)
		}
	}
	if aws.ToString(dead.Body) != "not json" {
		t.Errorf("body = %q", aws.ToString(dead.Body))
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler called %d times, want 1", got)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible+inFlight != 0 {
		t.Errorf("source queue still holds %d+%d messages", visible, inFlight)
	}
	if stats := server.Stats(); stats.DeadLettered != 1 || stats.Failed != 1 {
		t.Errorf("stats = %+v", stats)
	}
}

// TestEmulatorHeartbeatKeepsLongJobInvisible is C11 (m1), times shortened: VT 4 s, a
// 10 s job, two workers on the queue. The heartbeat keeps the message invisible, so
// the job runs once.
func TestEmulatorHeartbeatKeepsLongJobInvisible(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 4 * time.Second, MaxReceiveCount: 5})
	sendMessage(t, client, queue.URL, "m1", "")
	var calls callLog
	handler := sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		calls.add(message)
		select {
		case <-time.After(10 * time.Second): // the job's work
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	workers := []*recordingClient{{Client: client}, {Client: client}}
	var servers []*Server
	for _, worker := range workers {
		servers = append(servers, startServer(t, worker, Config{QueueURL: queue.URL, HandlerTimeout: 30 * time.Second}, handler))
	}
	testenv.Eventually(t, 30*time.Second, "m1 deleted", func() bool {
		return servers[0].Stats().Deleted+servers[1].Stats().Deleted == 1
	})
	got := calls.all()
	if len(got) != 1 || got[0].receiveCount != 1 {
		t.Fatalf("handler calls = %+v, want exactly one, with ApproximateReceiveCount 1", got)
	}
	heartbeats := 0
	for _, worker := range workers {
		for _, edit := range worker.edits(got[0].receipt) {
			if edit.seconds > 0 && !edit.failed {
				heartbeats++
			}
		}
	}
	if heartbeats < 2 {
		t.Errorf("%d visibility extensions for m1, want at least 2", heartbeats)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible+inFlight != 0 {
		t.Errorf("queue still holds %d+%d messages", visible, inFlight)
	}
}

// TestEmulatorHandlerTimeoutStopsHeartbeat is C11 variant A, times shortened (VT 4 s,
// hard timeout 6 s): the handler outlives its timeout and ignores the cancellation. Its
// context is cancelled at the timeout, no heartbeat follows, and the message is visible
// again, and handled by the next receive, within VT of the cancellation.
func TestEmulatorHandlerTimeoutStopsHeartbeat(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 4 * time.Second, MaxReceiveCount: 5})
	sendMessage(t, client, queue.URL, "m2", "")
	var calls callLog
	var cancelledAt, deadlineAt atomic.Pointer[time.Time]
	causes := make(chan error, 1)
	worker := &recordingClient{Client: client}
	server := startServer(t, worker, Config{
		QueueURL:       queue.URL,
		HandlerTimeout: 6 * time.Second,
		Backoff:        sqsworker.Backoff{Base: time.Second, Cap: time.Second, Jitter: sqsworker.JitterNone},
	}, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		calls.add(message)
		if message.ReceiveCount > 1 {
			return nil
		}
		deadline, _ := ctx.Deadline()
		deadlineAt.Store(&deadline)
		<-ctx.Done()
		now := time.Now()
		cancelledAt.Store(&now)
		causes <- context.Cause(ctx)
		time.Sleep(3 * time.Second) // keeps running, ignoring the cancellation
		return nil
	}))
	testenv.Eventually(t, 30*time.Second, "m2 handled a second time and deleted", func() bool {
		return server.Stats().Deleted == 1
	})
	if cause := <-causes; !errors.Is(cause, ErrHandlerTimeout) {
		t.Errorf("cause = %v, want ErrHandlerTimeout", cause)
	}
	got := calls.all()
	if len(got) != 2 {
		t.Fatalf("handler calls = %+v, want 2", got)
	}
	cancelled, deadline := *cancelledAt.Load(), *deadlineAt.Load()
	// The deadline is set just before the handler is called, so on a loaded machine the
	// call starts a little after it was set: compare with the context's own deadline.
	if timeout := deadline.Sub(got[0].at); timeout > 6*time.Second || timeout < 5*time.Second {
		t.Errorf("handler context deadline %s after the call began, want the 6s hard timeout", timeout)
	}
	if cancelled.Before(deadline) || cancelled.Sub(deadline) > time.Second {
		t.Errorf("context cancelled %s after its deadline, want at the deadline", cancelled.Sub(deadline))
	}
	heartbeats := 0
	for _, edit := range worker.edits(got[0].receipt) {
		if edit.seconds > 1 { // extensions, not the 1 s backoff
			heartbeats++
			if edit.at.After(cancelled) {
				t.Errorf("heartbeat at %s, after the cancellation at %s", edit.at, cancelled)
			}
		}
	}
	if heartbeats < 1 {
		t.Errorf("no heartbeat before the timeout; the 6s job outlives the 4s visibility")
	}
	if again := got[1].at.Sub(cancelled); again > 4*time.Second {
		t.Errorf("handled again %s after the cancellation, want within VT (4s)", again)
	}
	if got[1].receiveCount != 2 {
		t.Errorf("second call's receive count = %d, want 2", got[1].receiveCount)
	}
}

// TestEmulatorHeartbeatAfterHandlerDeletedItsMessage is C11 variant B: the handler
// deletes its own message; the next heartbeat fails, is logged once, heartbeats for it
// stop, and the server keeps working.
func TestEmulatorHeartbeatAfterHandlerDeletedItsMessage(t *testing.T) {
	t.Parallel()
	// The poller deletes m3 again after its handler did: AWS accepts that delete.
	testenv.SkipOn(t, testenv.ElasticMQRejectsRepeatedDelete)
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: 4 * time.Second})
	sendMessage(t, client, queue.URL, "m3", "")
	logs := newLogRecorder()
	const heartbeatMessage = "poller: heartbeat failed; no further heartbeats for this message"
	var calls callLog
	worker := &recordingClient{Client: client}
	server := startServer(t, worker, Config{
		QueueURL:            queue.URL,
		HeartbeatInterval:   time.Second,
		VisibilityExtension: 4 * time.Second,
		Logger:              slog.New(logs),
	}, sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
		calls.add(message)
		if message.Body != "m3" {
			return nil
		}
		if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: aws.String(message.ReceiptHandle)}); err != nil {
			return err
		}
		for len(logs.find(slog.LevelWarn, heartbeatMessage)) == 0 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // three more heartbeat periods
		return nil
	}))
	testenv.Eventually(t, 20*time.Second, "m3's handler done", func() bool { return server.Stats().Deleted == 1 })
	sendMessage(t, client, queue.URL, "m4", "")
	testenv.Eventually(t, 20*time.Second, "m4 handled after the heartbeat failure", func() bool { return server.Stats().Deleted == 2 })

	warnings := logs.find(slog.LevelWarn, heartbeatMessage)
	if len(warnings) != 1 || warnings[0].attrs["message_id"] == "" {
		t.Errorf("heartbeat warnings = %+v, want exactly one", warnings)
	}
	// A heartbeat call that failed as a whole (a timeout on a busy emulator) is retried
	// and is not what this test is about; the refused entry must be exactly one, and
	// the last edit for m3.
	edits := worker.edits(calls.all()[0].receipt)
	refusedAt := -1
	for i, edit := range edits {
		if edit.refused {
			if refusedAt >= 0 {
				t.Errorf("second refused heartbeat at %s", edit.at)
			}
			refusedAt = i
		}
	}
	if refusedAt < 0 || refusedAt != len(edits)-1 {
		t.Errorf("visibility edits for m3 = %+v, want the refused heartbeat last", edits)
	}
	if stats := server.Stats(); stats.HeartbeatFailures != 1 {
		t.Errorf("stats = %+v", stats)
	}
}

// emulatorVisibilityLag is how much later than asked LocalStack makes a message visible
// again: a visibility timeout of N s ends after about N+1 s (AWS: N s).
const emulatorVisibilityLag = time.Second

// TestEmulatorBackoffSchedule is C14: base 2 s, cap 4 s, no jitter, maxReceiveCount 4.
// The retries ask for exactly 2, 4 and 4 s; the handler is called 4 times, each gap
// matching the policy within 1 s (plus the emulator's visibility lag), and then the
// message is in the dead-letter queue.
func TestEmulatorBackoffSchedule(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 4})
	// How late a receive can see a message that just became visible depends on how busy
	// the emulator is: the upper bound of each gap adds twice the slowest of three
	// round trips measured now.
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		testenv.QueueAttributes(t, client, queue.URL)
		slowest = max(slowest, time.Since(begin))
	}
	sendMessage(t, client, queue.URL, "m1", "")
	var calls callLog
	worker := &recordingClient{Client: client}
	startServer(t, worker, Config{
		QueueURL: queue.URL,
		Backoff:  sqsworker.Backoff{Base: 2 * time.Second, Cap: 4 * time.Second, Jitter: sqsworker.JitterNone},
	}, sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		calls.add(message)
		return errors.New("E-orig")
	}))
	testenv.Eventually(t, 40*time.Second, "m1 in the dead-letter queue", func() bool {
		return visibleCount(t, client, queue.DeadLetterQueueURL) == 1
	})
	got := calls.all()
	if len(got) != 4 {
		t.Fatalf("handler called %d times, want 4", len(got))
	}
	wantGaps := []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i, call := range got {
		if call.receiveCount != i+1 {
			t.Errorf("call %d has receive count %d", i+1, call.receiveCount)
		}
		if i == 0 {
			continue
		}
		want := wantGaps[i-1]
		if edits := worker.edits(got[i-1].receipt); len(edits) != 1 || edits[0].seconds != int32(want/time.Second) {
			t.Errorf("retry %d asked for visibility %+v, want exactly %s", i, edits, want)
		}
		gap := call.at.Sub(got[i-1].at)
		if late := want + time.Second + emulatorVisibilityLag + 2*slowest; gap < want-time.Second || gap > late {
			t.Errorf("call %d came %s after call %d, want %s -1s..+%s (1s, the emulator's %s lag, twice its slowest round trip)", i+1, gap.Round(time.Millisecond), i, want, (late - want).Round(time.Millisecond), emulatorVisibilityLag)
		}
	}
}

// TestEmulatorStartRefusesQueueWithoutRedrivePolicy is C14 (d).
func TestEmulatorStartRefusesQueueWithoutRedrivePolicy(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	tests := []struct {
		name  string
		allow bool
	}{
		{"refused by default", false},
		{"accepted with AllowUnboundedRetries", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, err := New(client, Config{QueueURL: queue.URL, AllowUnboundedRetries: tc.allow}, nopHandler)
			if err != nil {
				t.Fatal(err)
			}
			err = server.Start(context.Background())
			defer server.Shutdown(context.Background())
			if tc.allow && err != nil {
				t.Errorf("Start: %v", err)
			}
			if !tc.allow && (err == nil || !strings.Contains(err.Error(), "Config.AllowUnboundedRetries") || !strings.Contains(err.Error(), "redrive policy")) {
				t.Errorf("Start = %v, want a refusal naming the redrive policy and Config.AllowUnboundedRetries", err)
			}
		})
	}
}

// TestEmulatorLongPollTimeoutsRejected is C13 configs 1 and 2: an HTTP header timeout
// of 15 s with the 20 s wait, and a 30 s wait, are rejected at startup, naming the
// setting.
func TestEmulatorLongPollTimeoutsRejected(t *testing.T) {
	t.Parallel()
	awsConfig := testenv.AWSConfig(t)
	tests := []struct {
		name   string
		client *sqs.Client
		wait   time.Duration
		want   string
	}{
		{
			name: "header timeout 15s with wait 20s",
			client: sqs.NewFromConfig(awsConfig, func(options *sqs.Options) {
				options.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(transport *http.Transport) {
					transport.ResponseHeaderTimeout = 15 * time.Second
				})
			}),
			want: "HTTP transport ResponseHeaderTimeout 15s must be at least Config.WaitTime 20s + 5s",
		},
		{
			name:   "wait 30s",
			client: sqs.NewFromConfig(awsConfig),
			wait:   30 * time.Second,
			want:   "Config.WaitTime 30s exceeds SQS's maximum WaitTimeSeconds of 20s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.client, Config{QueueURL: "http://127.0.0.1:4566/000000000000/unused", WaitTime: tc.wait}, nopHandler)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestEmulatorIdleQueueLongPolls is C13 config 3, the window shortened to 25 s: on an
// empty queue each receiver makes at most 2 ReceiveMessage calls (each waits 20 s), with
// no error: 1 or 2 calls with the defaults (one receiver), 2 to 4 with Concurrency 20
// (two receivers, asking for 10 each). Per receiver: any Receivers + 1 calls span at
// least a long poll, so no receiver polls again before its long poll has run out.
func TestEmulatorIdleQueueLongPolls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		concurrency int
		receivers   int
	}{
		{name: "defaults", receivers: 1},
		{name: "concurrency 20", concurrency: 20, receivers: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			worker := &recordingClient{Client: client}
			server, err := New(worker, Config{QueueURL: queue.URL, Concurrency: tc.concurrency}, nopHandler)
			if err != nil {
				t.Fatal(err)
			}
			if server.config.Receivers != tc.receivers {
				t.Fatalf("Receivers = %d, want %d", server.config.Receivers, tc.receivers)
			}
			if err := server.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(25 * time.Second) // the observation window: nothing to wait for but time
			worker.mu.Lock()
			calls, errs := len(worker.receiveStarts), len(worker.receiveErrors)
			starts := slices.Clone(worker.receiveStarts)
			inputs := slices.Clone(worker.receiveInputs)
			worker.mu.Unlock()
			// An idle worker's in-flight polls would hold the shutdown up to 20 s; cut it short.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_ = server.Shutdown(ctx)
			if calls > 2*tc.receivers || calls < tc.receivers {
				t.Errorf("%d ReceiveMessage calls in 25s, want %d to %d (long polls of 20s, %d receivers)", calls, tc.receivers, 2*tc.receivers, tc.receivers)
			}
			slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
			for i := 0; i+tc.receivers < len(starts); i++ {
				if gap := starts[i+tc.receivers].Sub(starts[i]); gap < 19*time.Second {
					t.Errorf("calls %d and %d started %s apart; with %d receivers, want at least the 20s long poll", i+1, i+1+tc.receivers, gap, tc.receivers)
				}
			}
			if errs != 0 {
				t.Errorf("%d receive errors, want 0", errs)
			}
			for i, input := range inputs[:min(tc.receivers, len(inputs))] {
				if input.WaitTimeSeconds != 20 || input.MaxNumberOfMessages != 10 {
					t.Errorf("receive input %d = %+v, want WaitTimeSeconds 20, MaxNumberOfMessages 10", i+1, input)
				}
			}
		})
	}
}

// TestEmulatorFIFOGroupOrder: per-group order; after a failure, the rest of the group
// already received is released unhandled and handled later, in order. a2 asks for an
// immediate retry (RetryAfter 0): LocalStack, unlike AWS, hands out a released a3 while
// a2 is still invisible for a longer delay, which would break the order on the emulator
// only (a LocalStack 4.14 difference, listed in localstack/README.md).
func TestEmulatorFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, ContentBasedDeduplication: true, MaxReceiveCount: 5})
	for _, item := range []struct{ body, group string }{{"a1", "g1"}, {"b1", "g2"}, {"a2", "g1"}, {"b2", "g2"}, {"a3", "g1"}} {
		sendMessage(t, client, queue.URL, item.body, item.group)
	}
	var calls callLog
	var failedOnce atomic.Bool
	server := startServer(t, client, Config{QueueURL: queue.URL}, sqsworker.HandlerFunc(func(_ context.Context, message *sqsworker.Message) error {
		calls.add(message)
		if message.Body == "a2" && failedOnce.CompareAndSwap(false, true) {
			return sqsworker.RetryAfter(0, errors.New("a2 fails once"))
		}
		return nil
	}))
	testenv.Eventually(t, 30*time.Second, "all five deleted", func() bool { return server.Stats().Deleted == 5 })
	var g1, g2 []string
	for _, call := range calls.all() {
		if strings.HasPrefix(call.body, "a") {
			g1 = append(g1, call.body)
		} else {
			g2 = append(g2, call.body)
		}
	}
	if strings.Join(g1, ",") != "a1,a2,a2,a3" || strings.Join(g2, ",") != "b1,b2" {
		t.Errorf("handled g1 %v and g2 %v; want a1,a2,a2,a3 and b1,b2", g1, g2)
	}
	if stats := server.Stats(); stats.Released != 1 || stats.Failed != 1 {
		t.Errorf("stats = %+v, want a3 released once after a2 failed", stats)
	}
}
