package tasktoken_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/tasktoken"
)

func TestNewNamesEveryMissingSetting(t *testing.T) {
	_, err := tasktoken.New(tasktoken.Config{HeartbeatInterval: -1})
	if err == nil {
		t.Fatal("New with an empty config: nil error")
	}
	for _, want := range []string{"Config.API is required", "Config.Token is required", "HeartbeatInterval must not be negative", "set Config.MaxReceiveCount or Config.Queues"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v; want it to say %q", err, want)
		}
	}
}

func TestSetOutputOutsideAJobFails(t *testing.T) {
	if err := tasktoken.SetOutput(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "outside a task-token job") {
		t.Fatalf("SetOutput outside the middleware: %v", err)
	}
}
