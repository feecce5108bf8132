package poller

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

var nopHandler = sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })

func TestNewRejectsEachBadSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"empty queue URL", func(c *Config) { c.QueueURL = "" }, "Config.QueueURL"},
		{"negative concurrency", func(c *Config) { c.Concurrency = -1 }, "Config.Concurrency"},
		{"too many messages", func(c *Config) { c.MaxMessages = 11 }, "Config.MaxMessages"},
		{"negative messages", func(c *Config) { c.MaxMessages = -2 }, "Config.MaxMessages"},
		{"negative receivers", func(c *Config) { c.Receivers = -1 }, "Config.Receivers"},
		{"too many receivers", func(c *Config) { c.Concurrency, c.Receivers = 100, 11 }, "Config.Receivers"},
		{"more receivers than concurrency", func(c *Config) { c.Concurrency, c.Receivers = 3, 4 }, "Config.Receivers 4 exceeds Config.Concurrency 3"},
		{"wait above 20s", func(c *Config) { c.WaitTime = 30 * time.Second }, "Config.WaitTime"},
		{"wait below 1s", func(c *Config) { c.WaitTime = 500 * time.Millisecond }, "Config.WaitTime"},
		{"wait not whole seconds", func(c *Config) { c.WaitTime = 1500 * time.Millisecond }, "Config.WaitTime"},
		{"negative handler timeout", func(c *Config) { c.HandlerTimeout = -time.Second }, "Config.HandlerTimeout"},
		{"handler timeout of 12h", func(c *Config) { c.HandlerTimeout = 12 * time.Hour }, "Config.HandlerTimeout"},
		{"negative heartbeat", func(c *Config) { c.HeartbeatInterval = -time.Second }, "Config.HeartbeatInterval"},
		{"negative extension", func(c *Config) { c.VisibilityExtension = -time.Second }, "Config.VisibilityExtension"},
		{"extension above 12h", func(c *Config) { c.VisibilityExtension = 13 * time.Hour }, "Config.VisibilityExtension"},
		{"heartbeat not shorter than extension", func(c *Config) {
			c.HeartbeatInterval, c.VisibilityExtension = 30*time.Second, 30*time.Second
		}, "Config.HeartbeatInterval"},
		{"negative drain", func(c *Config) { c.DrainTimeout = -time.Second }, "Config.DrainTimeout"},
		{"negative stop timeout", func(c *Config) { c.StopTimeout = -time.Second }, "Config.StopTimeout"},
		{"stop timeout without room to drain", func(c *Config) { c.StopTimeout = 5 * time.Second }, "Config.StopTimeout 5s leaves no time to drain"},
		{"metrics handler without a health address", func(c *Config) { c.MetricsHandler = http.NotFoundHandler() }, "Config.MetricsHandler"},
		{"negative backoff base", func(c *Config) { c.Backoff.Base = -time.Second }, "Config.Backoff.Base"},
		{"negative backoff cap", func(c *Config) { c.Backoff.Cap = -time.Second }, "Config.Backoff.Cap"},
		{"backoff base above cap", func(c *Config) { c.Backoff.Base, c.Backoff.Cap = time.Minute, time.Second }, "Config.Backoff.Base"},
		{"unknown jitter", func(c *Config) { c.Backoff.Jitter = 7 }, "Config.Backoff.Jitter"},
		{"negative HTTP timeout", func(c *Config) { c.HTTPClientTimeout = -time.Second }, "Config.HTTPClientTimeout"},
		{"HTTP timeout below wait + 5s", func(c *Config) { c.HTTPClientTimeout = 24 * time.Second }, "Config.HTTPClientTimeout"},
		{"delete flush interval too long", func(c *Config) { c.DeleteFlushInterval = time.Minute }, "Config.DeleteFlushInterval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			config := Config{QueueURL: fakeQueueURL}
			tc.change(&config)
			_, err := New(newFakeAPI(), config, nopHandler)
			if err == nil {
				t.Fatalf("New accepted the config; want an error naming %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "poller: ") {
				t.Errorf("error %q does not start with \"poller: \" and name %s", err, tc.want)
			}
		})
	}
}

func TestNewReportsEveryProblemInOneError(t *testing.T) {
	t.Parallel()
	config := Config{
		Concurrency:         -1,
		MaxMessages:         11,
		Receivers:           -1,
		WaitTime:            30 * time.Second,
		HandlerTimeout:      -1,
		HeartbeatInterval:   -1,
		VisibilityExtension: -1,
		DrainTimeout:        -1,
		Backoff:             sqsworker.Backoff{Base: -1, Cap: -1},
		HTTPClientTimeout:   -1,
	}
	_, err := New(nil, config, nil)
	if err == nil {
		t.Fatal("New accepted the config")
	}
	for _, field := range []string{
		"SQS client", "handler", "Config.QueueURL", "Config.Concurrency", "Config.MaxMessages", "Config.Receivers",
		"Config.WaitTime", "Config.HandlerTimeout", "Config.HeartbeatInterval",
		"Config.VisibilityExtension", "Config.DrainTimeout", "Config.Backoff.Base",
		"Config.Backoff.Cap", "Config.HTTPClientTimeout",
	} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
	if lines := strings.Count(err.Error(), "\n") + 1; lines != 14 {
		t.Errorf("error has %d lines, want one per problem (14):\n%v", lines, err)
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	t.Parallel()
	server, err := New(newFakeAPI(), Config{QueueURL: fakeQueueURL}, nopHandler)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	got := server.config
	if got.Concurrency != 10 || got.MaxMessages != 10 || got.WaitTime != 20*time.Second ||
		got.HandlerTimeout != 5*time.Minute || got.DrainTimeout != 25*time.Second ||
		got.DeleteFlushInterval != 100*time.Millisecond || got.Logger == nil || got.Receivers != 1 {
		t.Errorf("defaults not applied: %+v", got)
	}
}

// TestStopTimeoutBoundsTheDrain is CASES.md N26's unit lane: the drain deadline is the
// platform's stop timeout less the 5 s the shutdown needs after it; a longer drain
// timeout is lowered, with the warning Start logs; a shorter one is kept.
func TestStopTimeoutBoundsTheDrain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		stop, drain time.Duration
		want        time.Duration
		wantWarning string
	}{
		{name: "ECS's default 30 s, drain unset", stop: 30 * time.Second, want: 25 * time.Second},
		{name: "Fargate's 120 s", stop: 120 * time.Second, want: 115 * time.Second},
		{name: "10 s", stop: 10 * time.Second, want: 5 * time.Second},
		{name: "drain 60 s under a 30 s stop timeout", stop: 30 * time.Second, drain: time.Minute, want: 25 * time.Second,
			wantWarning: "poller: drain timeout 1m0s exceeds the stop timeout 30s less the 5s the shutdown needs after its drain deadline; draining for 25s"},
		{name: "a shorter drain is kept", stop: 30 * time.Second, drain: 10 * time.Second, want: 10 * time.Second},
		{name: "stop timeout unknown", drain: time.Minute, want: time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := newLogRecorder()
			server := startServer(t, newFakeAPI(), Config{StopTimeout: tc.stop, DrainTimeout: tc.drain, WaitTime: time.Second, Logger: slog.New(logs)}, nopHandler)
			if got := server.config.DrainTimeout; got != tc.want {
				t.Errorf("DrainTimeout %s, want %s", got, tc.want)
			}
			var warnings []string
			for _, record := range logs.all() {
				if record.level == slog.LevelWarn && strings.Contains(record.message, "drain timeout") {
					warnings = append(warnings, record.message)
				}
			}
			if tc.wantWarning == "" && len(warnings) != 0 || tc.wantWarning != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.wantWarning)) {
				t.Errorf("warnings %q, want %q", warnings, tc.wantWarning)
			}
		})
	}
}

// TestNewDefaultsReceivers: Receivers defaults to ⌈Concurrency / MaxMessages⌉, at most
// 10; a value that is set is kept.
func TestNewDefaultsReceivers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		concurrency, maxMessages, receivers, want int
	}{
		{0, 0, 0, 1},     // Concurrency 10, MaxMessages 10
		{1, 0, 0, 1},     // fewer slots than one call may ask for
		{10, 0, 0, 1},    // exactly one full call
		{11, 0, 0, 2},    // one more slot: a second call
		{12, 10, 0, 2},   // 10 + 2
		{20, 0, 0, 2},    // the bench's setting: 2 × 10, like the ceiling's 2 loops
		{21, 0, 0, 3},    // rounded up
		{20, 3, 0, 7},    // ⌈20 / 3⌉
		{95, 10, 0, 10},  // ⌈95 / 10⌉
		{500, 10, 0, 10}, // capped at 10
		{500, 1, 0, 10},  // capped at 10
		{20, 0, 1, 1},    // set: kept, even below the default
		{20, 0, 5, 5},    // set: kept, above the default (each asks for its share of free slots)
		{3, 0, 3, 3},     // as many receivers as slots is allowed
	}
	for _, tc := range tests {
		config := Config{QueueURL: fakeQueueURL, Concurrency: tc.concurrency, MaxMessages: tc.maxMessages, Receivers: tc.receivers}
		server, err := New(newFakeAPI(), config, nopHandler)
		if err != nil {
			t.Errorf("New(Concurrency %d, MaxMessages %d, Receivers %d): %v", tc.concurrency, tc.maxMessages, tc.receivers, err)
			continue
		}
		if got := server.config.Receivers; got != tc.want {
			t.Errorf("Concurrency %d, MaxMessages %d, Receivers %d: Receivers = %d, want %d", tc.concurrency, tc.maxMessages, tc.receivers, got, tc.want)
		}
	}
}

// TestNewChecksSQSClientHTTPTimeouts is C13 configs 1 and 2 at the unit level: a
// response timeout shorter than the long-poll wait + 5 s is found on the SDK client
// itself and reported by New, naming the setting.
func TestNewChecksSQSClientHTTPTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		httpClient sqs.HTTPClient
		wait       time.Duration
		want       string // "" when accepted
	}{
		{"default client", nil, 0, ""},
		{"buildable header timeout 15s", awshttp.NewBuildableClient().WithTransportOptions(func(transport *http.Transport) {
			transport.ResponseHeaderTimeout = 15 * time.Second
		}), 0, "ResponseHeaderTimeout"},
		{"buildable header timeout 25s", awshttp.NewBuildableClient().WithTransportOptions(func(transport *http.Transport) {
			transport.ResponseHeaderTimeout = 25 * time.Second
		}), 0, ""},
		{"buildable client timeout 20s", awshttp.NewBuildableClient().WithTimeout(20 * time.Second), 0, "BuildableClient.WithTimeout"},
		{"buildable read timeout 10s", awshttp.NewBuildableClient().WithReadTimeout(10 * time.Second), 0, "BuildableClient.WithReadTimeout"},
		{"buildable client timeout 15s with wait 10s", awshttp.NewBuildableClient().WithTimeout(15 * time.Second), 10 * time.Second, ""},
		{"net/http client timeout 10s", &http.Client{Timeout: 10 * time.Second}, 0, "http.Client.Timeout"},
		{"net/http transport header timeout 5s", &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}, 0, "ResponseHeaderTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := sqs.New(sqs.Options{Region: "us-east-1", HTTPClient: tc.httpClient, Credentials: aws.AnonymousCredentials{}})
			_, err := New(client, Config{QueueURL: fakeQueueURL, WaitTime: tc.wait}, nopHandler)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New error = %v; want one naming %s", err, tc.want)
			}
		})
	}
}

func TestStartChecksQueue(t *testing.T) {
	t.Parallel()
	noRedrive := func() *fakeAPI {
		api := newFakeAPI()
		delete(api.attributes, "RedrivePolicy")
		return api
	}
	tests := []struct {
		name   string
		api    *fakeAPI
		config Config
		want   string // "" when Start succeeds
	}{
		{"redrive policy", newFakeAPI(), Config{}, ""},
		{"no redrive policy", noRedrive(), Config{}, "AllowUnboundedRetries"},
		{"no redrive policy, unbounded retries allowed", noRedrive(), Config{AllowUnboundedRetries: true}, ""},
		{"heartbeat not shorter than the queue's visibility", newFakeAPI(), Config{HeartbeatInterval: 30 * time.Second}, "Config.HeartbeatInterval"},
		{"bad health address", newFakeAPI(), Config{HealthCheckAddress: "256.0.0.1:x"}, "Config.HealthCheckAddress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.config.QueueURL = fakeQueueURL
			server, err := New(tc.api, tc.config, nopHandler)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			err = server.Start(context.Background())
			defer server.Shutdown(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Start: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "poller: ")):
				t.Errorf("Start error = %v; want one naming %s", err, tc.want)
			}
			if tc.want != "" {
				if tc.api.receiveCalls() != 0 {
					t.Errorf("a refused server received messages")
				}
			}
		})
	}
}

func TestWithQueueDefaultsHeartbeatFromVisibilityTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		visibility    time.Duration
		config        Config
		wantExtension time.Duration
		wantInterval  time.Duration
	}{
		{"queue visibility 60s", time.Minute, Config{}, time.Minute, 20 * time.Second},
		{"queue visibility 4s is raised to 10s", 4 * time.Second, Config{}, 10 * time.Second, 10 * time.Second / 3},
		{"explicit settings", time.Minute, Config{VisibilityExtension: 30 * time.Second, HeartbeatInterval: 5 * time.Second}, 30 * time.Second, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			queue := &sqsinfo.Queue{URL: fakeQueueURL, VisibilityTimeout: tc.visibility, RedrivePolicy: &sqsinfo.RedrivePolicy{MaxReceiveCount: 3}}
			got, err := tc.config.withQueue(queue)
			if err != nil {
				t.Fatalf("withQueue: %v", err)
			}
			if got.VisibilityExtension != tc.wantExtension || got.HeartbeatInterval != tc.wantInterval {
				t.Errorf("extension, interval = %s, %s; want %s, %s", got.VisibilityExtension, got.HeartbeatInterval, tc.wantExtension, tc.wantInterval)
			}
		})
	}
}
