package poller

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

var testBackoff = sqsworker.Backoff{Base: 3 * time.Second, Cap: time.Minute, Jitter: sqsworker.JitterNone}

// settled reports whether the server has finished with every message it received:
// nothing held, nothing waiting to be deleted.
func settled(server *Server) bool {
	stats := server.Stats()
	return stats.Received > 0 && stats.InFlight == 0 && !server.queues[0].acker.waiting()
}

func TestOutcomeActions(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name         string
		receiveCount int
		handle       func() error
		config       Config
		setup        func(*fakeAPI)
		wantDelete   bool
		wantSend     bool
		// wantReason is the failure-reason of the dead-letter copy; if empty, MalformedBody.
		wantReason string
		// wantVisibility is the ChangeMessageVisibility timeout expected, or -1 for none.
		wantVisibility int32
		wantStats      sqsworker.Stats
	}{
		{
			name:           "success deletes",
			handle:         func() error { return nil },
			wantDelete:     true,
			wantVisibility: -1,
			wantStats:      sqsworker.Stats{Deleted: 1},
		},
		{
			name:           "permanent error sends to the dead-letter queue, then deletes",
			handle:         func() error { return sqsworker.Permanent("MalformedBody", errBoom) },
			wantSend:       true,
			wantDelete:     true,
			wantVisibility: -1,
			wantStats:      sqsworker.Stats{Deleted: 1, DeadLettered: 1, Failed: 1},
		},
		{
			name:   "dead-letter send failure falls back to a backoff retry, no delete",
			handle: func() error { return sqsworker.Permanent("MalformedBody", errBoom) },
			setup: func(api *fakeAPI) {
				api.onSend = func(*sqs.SendMessageInput) error { return errors.New("throttled") }
			},
			wantSend:       true,
			wantVisibility: 3,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "dead-letter send disabled retries with backoff",
			handle:         func() error { return sqsworker.Permanent("MalformedBody", errBoom) },
			config:         Config{DisableDeadLetterSend: true},
			wantVisibility: 3,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "retry after sets the requested delay",
			handle:         func() error { return sqsworker.RetryAfter(90*time.Second, errBoom) },
			wantVisibility: 90,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "retry after rounds up to whole seconds",
			handle:         func() error { return sqsworker.RetryAfter(1200*time.Millisecond, nil) },
			wantVisibility: 2,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "defer sets the delay and counts as deferred, not failed",
			handle:         func() error { return sqsworker.Defer(45*time.Second, "lease held elsewhere") },
			wantVisibility: 45,
			wantStats:      sqsworker.Stats{Deferred: 1},
		},
		{
			name:           "error on first receive retries after the base delay",
			handle:         func() error { return errBoom },
			wantVisibility: 3,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "error on third receive retries after base * 4",
			receiveCount:   3,
			handle:         func() error { return errBoom },
			setup:          func(api *fakeAPI) { api.attributes["RedrivePolicy"] = redrivePolicy(5) },
			wantVisibility: 12,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "error at the last receive (maxReceiveCount 3) sends to the dead-letter queue as RetriesExhausted, then deletes",
			receiveCount:   3,
			handle:         func() error { return errBoom },
			wantSend:       true,
			wantReason:     sqsworker.ReasonRetriesExhausted,
			wantDelete:     true,
			wantVisibility: -1,
			wantStats:      sqsworker.Stats{Deleted: 1, DeadLettered: 1, Failed: 1},
		},
		{
			name:         "error at the last receive with the dead-letter send disabled: retried, the redrive policy moves it",
			receiveCount: 3,
			handle:       func() error { return errBoom },
			config:       Config{DisableDeadLetterSend: true},
			// 12 s: the backoff of the third receive
			wantVisibility: 12,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
		{
			name:           "panic is an ordinary retry",
			handle:         func() error { panic("nil map") },
			wantVisibility: 3,
			wantStats:      sqsworker.Stats{Failed: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			receiveCount := max(tc.receiveCount, 1)
			api := newFakeAPI([]types.Message{fakeMessage("m1", receiveCount)})
			if tc.setup != nil {
				tc.setup(api)
			}
			config := tc.config
			config.Backoff = testBackoff
			server := startServer(t, api, config, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				return tc.handle()
			}))
			eventually(t, "the message is settled", func() bool { return settled(server) })
			if err := server.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}

			deletes, visibilities, _, sends := api.recorded()
			if got := len(deletes) == 1; got != tc.wantDelete {
				t.Errorf("deleted = %v (%d DeleteMessageBatch calls), want %v", got, len(deletes), tc.wantDelete)
			}
			if tc.wantDelete && aws.ToString(deletes[0].Entries[0].ReceiptHandle) != "rh-m1" {
				t.Errorf("delete receipt handle = %s, want rh-m1", aws.ToString(deletes[0].Entries[0].ReceiptHandle))
			}
			if got := len(sends) == 1; got != tc.wantSend {
				t.Errorf("sent to the dead-letter queue = %v, want %v", got, tc.wantSend)
			}
			if tc.wantSend {
				send := sends[0]
				if aws.ToString(send.QueueUrl) != fakeDLQURL || aws.ToString(send.MessageBody) != "body-m1" ||
					aws.ToString(send.MessageAttributes[sqsworker.AttributeFailureReason].StringValue) != cmp.Or(tc.wantReason, "MalformedBody") ||
					aws.ToString(send.MessageAttributes[sqsworker.AttributeFailureMessageID].StringValue) != "m1" {
					t.Errorf("dead-letter send = %+v", send)
				}
			}
			switch {
			case tc.wantVisibility < 0 && len(visibilities) != 0:
				t.Errorf("unexpected ChangeMessageVisibility calls: %d", len(visibilities))
			case tc.wantVisibility >= 0 && len(visibilities) != 1:
				t.Errorf("%d ChangeMessageVisibility calls, want 1", len(visibilities))
			case tc.wantVisibility >= 0 && visibilities[0].VisibilityTimeout != tc.wantVisibility:
				t.Errorf("VisibilityTimeout = %d, want %d", visibilities[0].VisibilityTimeout, tc.wantVisibility)
			}
			got := server.Stats()
			if got.Deleted != tc.wantStats.Deleted || got.DeadLettered != tc.wantStats.DeadLettered ||
				got.Failed != tc.wantStats.Failed || got.Deferred != tc.wantStats.Deferred || got.Received != 1 {
				t.Errorf("stats = %+v, want %+v", got, tc.wantStats)
			}
		})
	}
}

// TestVisibilityClampedToTwelveHours is C14 (b): a 13 h delay for a message first
// received 1 h ago is clamped below what SQS still accepts, never negative.
func TestVisibilityClampedToTwelveHours(t *testing.T) {
	t.Parallel()
	limit := int32((12*time.Hour - time.Hour - sqsx.VisibilitySafetyMargin) / time.Second)
	tests := []struct {
		name    string
		backoff sqsworker.Backoff
		err     error
	}{
		{"retry after 13h", testBackoff, sqsworker.RetryAfter(13*time.Hour, nil)},
		{"backoff of 13h", sqsworker.Backoff{Base: 13 * time.Hour, Cap: 13 * time.Hour, Jitter: sqsworker.JitterNone}, errors.New("E")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			message := fakeMessage("m1", 2)
			message.Attributes["ApproximateFirstReceiveTimestamp"] = strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
			api := newFakeAPI([]types.Message{message})
			server := startServer(t, api, Config{Backoff: tc.backoff}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				return tc.err
			}))
			eventually(t, "the message is settled", func() bool { return settled(server) })
			_, visibilities, _, _ := api.recorded()
			if len(visibilities) != 1 {
				t.Fatalf("%d ChangeMessageVisibility calls, want 1", len(visibilities))
			}
			if got := visibilities[0].VisibilityTimeout; got > limit || got < limit-5 {
				t.Errorf("VisibilityTimeout = %d, want at most (and close to) 43200 - 3600 - 30 = %d", got, limit)
			}
			if stats := server.Stats(); stats.RescheduleFailures != 0 {
				t.Errorf("reschedule failed: %+v", stats)
			}
		})
	}
}

// TestRescheduleFailureReportsOriginalError is C14 (c): when the ChangeMessageVisibility
// for the retry fails, the failure reported is the handler's original error and the
// reschedule error is only a warning.
func TestRescheduleFailureReportsOriginalError(t *testing.T) {
	t.Parallel()
	errOriginal := errors.New("E-orig")
	api := newFakeAPI([]types.Message{fakeMessage("m1", 1)})
	api.onVisibility = func(*sqs.ChangeMessageVisibilityInput) error {
		return &smithy.GenericAPIError{Code: "ReceiptHandleIsInvalid", Message: "The receipt handle has expired."}
	}
	logs := newLogRecorder()
	var mu sync.Mutex
	var reported []error
	server := startServer(t, api, Config{
		Backoff: testBackoff,
		Logger:  slog.New(logs),
		ErrorHandler: func(_ context.Context, _ *sqsworker.Message, err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		},
	}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return errOriginal }))
	eventually(t, "the message is settled", func() bool { return settled(server) })

	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || reported[0] != errOriginal {
		t.Errorf("ErrorHandler got %v, want exactly [E-orig]", reported)
	}
	failures := logs.find(slog.LevelError, "poller: handler failed")
	if len(failures) != 1 || failures[0].attrs["error"] != "E-orig" || failures[0].attrs["message_id"] != "m1" ||
		failures[0].attrs["queue"] != fakeQueueURL || failures[0].attrs["receive_count"] != "1" {
		t.Errorf("failure logs = %+v, want one with error E-orig, message_id, queue and receive_count", failures)
	}
	warnings := logs.find(slog.LevelWarn, "poller: rescheduling the message failed; it returns after its current visibility timeout")
	if len(warnings) != 1 || warnings[0].attrs["code"] != "ReceiptHandleIsInvalid" || warnings[0].attrs["handler_error"] != "E-orig" {
		t.Errorf("reschedule warnings = %+v, want one with code ReceiptHandleIsInvalid", warnings)
	}
	if stats := server.Stats(); stats.Failed != 1 || stats.RescheduleFailures != 1 || stats.Deleted != 0 {
		t.Errorf("stats = %+v", stats)
	}
	for _, record := range logs.all() {
		for _, value := range record.attrs {
			if strings.Contains(value, "body-m1") {
				t.Errorf("a log contains the message body: %+v", record)
			}
		}
	}
}
