package poller

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker"
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
