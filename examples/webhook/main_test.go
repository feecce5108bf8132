package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/poller"
)

func env(values map[string]string) func(string) string {
	return func(name string) string { return values[name] }
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    config
		wantErr []string
	}{
		{
			name: "defaults",
			env:  map[string]string{envQueueURL: "http://127.0.0.1:4566/queue/q", envTable: "t"},
			want: config{QueueURL: "http://127.0.0.1:4566/queue/q", Table: "t", HandlerTimeout: 15 * time.Second, LogFormat: "json"},
		},
		{
			name: "everything set",
			env: map[string]string{
				envQueueName: "webhook-deliveries", envTable: "t", envConcurrency: "8", envHandlerTimeout: "20s",
				envDrainTimeout: "10s", envHealthAddress: "127.0.0.1:8080", envDeliveryTimeout: "3s",
				envLogFormat: "TEXT", envLogLevel: "debug",
			},
			want: config{
				QueueName: "webhook-deliveries", Table: "t", Concurrency: 8, HandlerTimeout: 20 * time.Second,
				DrainTimeout: 10 * time.Second, HealthAddress: "127.0.0.1:8080", DeliveryTimeout: 3 * time.Second,
				LogFormat: "text", LogLevel: slog.LevelDebug,
			},
		},
		{
			name:    "nothing set",
			env:     map[string]string{},
			wantErr: []string{"set SQSWORKER_QUEUE_URL, or SQSWORKER_QUEUE_NAME", "SQSWORKER_IDEMPOTENCY_TABLE is empty"},
		},
		{
			name: "every value wrong",
			env: map[string]string{
				envQueueURL: "u", envQueueName: "n", envTable: "t", envConcurrency: "0", envHandlerTimeout: "15",
				envDrainTimeout: "-1s", envLogFormat: "xml", envLogLevel: "loud",
			},
			wantErr: []string{
				"set only one of", `SQSWORKER_CONCURRENCY="0"`, `SQSWORKER_HANDLER_TIMEOUT="15"`,
				`SQSWORKER_DRAIN_TIMEOUT="-1s"`, `SQSWORKER_LOG_FORMAT="xml"`, `SQSWORKER_LOG_LEVEL="loud"`,
			},
		},
		{
			name:    "delivery timeout not below handler timeout",
			env:     map[string]string{envQueueURL: "u", envTable: "t", envHandlerTimeout: "5s", envDeliveryTimeout: "5s"},
			wantErr: []string{"SQSWORKER_DELIVERY_TIMEOUT (5s) must be shorter than SQSWORKER_HANDLER_TIMEOUT (5s)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(env(tc.env))
			if len(tc.wantErr) == 0 {
				if err != nil || got != tc.want {
					t.Errorf("loadConfig = %+v, %v\nwant %+v", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatal("loadConfig succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != poller.HealthCheckPath {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer server.Close()
	address := strings.TrimPrefix(server.URL, "http://")
	if code := healthcheck([]string{address}); code != 0 {
		t.Errorf("healthcheck of a running worker = %d, want 0", code)
	}
	status.Store(http.StatusServiceUnavailable)
	if code := healthcheck([]string{address}); code != 1 {
		t.Errorf("healthcheck of a stopping worker = %d, want 1", code)
	}
	t.Setenv(envHealthAddress, "")
	if code := healthcheck(nil); code != 1 {
		t.Errorf("healthcheck without an address = %d, want 1", code)
	}
}
