package poller

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestEmulatorFinalDeleteFlushIsLogged: at shutdown each queue's final delete flush logs
// one info line with what it deleted and what it could not confirm. When SQS refuses
// every DeleteMessageBatch (500 InternalError through the fault proxy), the error line
// of the delete the flush gave up on carries SQS's code and message. Before, a flush
// that succeeded logged nothing, and the error line had empty code= and error=.
func TestEmulatorFinalDeleteFlushIsLogged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		refuse               bool
		deleted, unconfirmed string
	}{
		{name: "deletes confirmed", deleted: "2", unconfirmed: "0"},
		{name: "SQS refuses the deletes", refuse: true, deleted: "0", unconfirmed: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			direct := testenv.SQS(t)
			client, proxy := proxiedSQS(t)
			queue := testenv.NewQueue(t, direct, testenv.QueueOptions{VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 5})
			if tc.refuse {
				proxy.SetRules(faultproxy.Rule{Operations: []string{"DeleteMessageBatch"}, Fraction: 1, Status: 500, Code: "InternalError", Message: "We encountered an internal error. Please try again."})
			}
			sendMessage(t, direct, queue.URL, "m1", "")
			sendMessage(t, direct, queue.URL, "m2", "")
			logs := newLogRecorder()
			var handled atomic.Int32
			server, err := New(client, Config{
				QueueURL: queue.URL, WaitTime: time.Second, Logger: slog.New(logs),
				DeleteFlushInterval: maxDeleteFlushInterval, // the deletes wait for the shutdown's flush
			}, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				handled.Add(1)
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if err := server.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 20*time.Second, "m1 and m2 handled", func() bool { return handled.Load() == 2 })
			err = server.Shutdown(context.Background())
			if tc.refuse != errors.Is(err, ErrDeletesNotConfirmed) {
				t.Errorf("Shutdown: %v", err)
			}
			flushes := logs.find(slog.LevelInfo, "poller: final delete flush")
			if len(flushes) != 1 {
				t.Fatalf("%d final delete flush lines, want 1: %v", len(flushes), logs.all())
			}
			if got := flushes[0].attrs; got["deleted"] != tc.deleted || got["unconfirmed"] != tc.unconfirmed || got["duration"] == "" {
				t.Errorf("final delete flush line attrs %v, want deleted=%s unconfirmed=%s and a duration", got, tc.deleted, tc.unconfirmed)
			}
			gaveUp := logs.find(slog.LevelError, "poller: delete not confirmed before shutdown; the message will be delivered again")
			if !tc.refuse {
				if len(gaveUp) != 0 {
					t.Errorf("unconfirmed deletes logged: %v", gaveUp)
				}
				return
			}
			if len(gaveUp) != 2 {
				t.Fatalf("%d unconfirmed-delete lines, want 2: %v", len(gaveUp), logs.all())
			}
			for _, line := range gaveUp {
				if line.attrs["code"] != "InternalError" || !strings.Contains(line.attrs["error"], "We encountered an internal error") {
					t.Errorf("unconfirmed-delete line code=%q error=%q, want SQS's InternalError and its message", line.attrs["code"], line.attrs["error"])
				}
			}
		})
	}
}
