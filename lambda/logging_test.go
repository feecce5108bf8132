package lambda

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoggerFromEnvironmentWritesJSONWhenLambdaAsksForJSON(t *testing.T) {
	var out bytes.Buffer
	logger := LoggerFromEnvironment(envOf(map[string]string{"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "WARN"}), &out)
	logger.Info("dropped")
	logger.Warn("kept", "queue", "orders")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1 (INFO below WARN dropped): %q", len(lines), out.String())
	}
	var record map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &record); err != nil {
		t.Fatalf("line is not JSON: %v: %s", err, lines[0])
	}
	if record["msg"] != "kept" || record["level"] != "WARN" || record["queue"] != "orders" {
		t.Fatalf("record = %v", record)
	}
}

func TestLoggerFromEnvironmentDefaultsToTextAtInfo(t *testing.T) {
	var out bytes.Buffer
	logger := LoggerFromEnvironment(envOf(nil), &out)
	logger.Debug("dropped")
	logger.Info("kept")
	if got := strings.TrimSpace(out.String()); strings.Count(got, "\n") != 0 || !strings.Contains(got, "level=INFO msg=kept") {
		t.Fatalf("output = %q, want one text line at INFO", got)
	}
}

func TestLogLevelNamesOfLambda(t *testing.T) {
	cases := map[string]string{"trace": "DEBUG-4", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARN", "ERROR": "ERROR", "FATAL": "ERROR+4", "": "INFO", "loud": "INFO"}
	for name, want := range cases {
		if got := logLevel(name).String(); got != want {
			t.Errorf("logLevel(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestNewBatchHandlerLogsAsTheFunctionsLoggingConfigurationSays: without WithLogger, the
// adapter's logger is LoggerFromEnvironment's, from AWS_LAMBDA_LOG_FORMAT and
// AWS_LAMBDA_LOG_LEVEL (as worker.Run's is), not slog.Default().
func TestNewBatchHandlerLogsAsTheFunctionsLoggingConfigurationSays(t *testing.T) {
	t.Setenv("AWS_LAMBDA_LOG_FORMAT", "JSON")
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "WARN")
	cfg, err := newConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.logger.Handler().(*slog.JSONHandler); !ok {
		t.Errorf("handler %T, want *slog.JSONHandler for AWS_LAMBDA_LOG_FORMAT=JSON", cfg.logger.Handler())
	}
	if cfg.logger.Enabled(context.Background(), slog.LevelInfo) || !cfg.logger.Enabled(context.Background(), slog.LevelWarn) {
		t.Error("want INFO off and WARN on at AWS_LAMBDA_LOG_LEVEL=WARN")
	}

	t.Setenv("AWS_LAMBDA_LOG_FORMAT", "Text")
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "")
	cfg, err = newConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.logger.Handler().(*slog.TextHandler); !ok || !cfg.logger.Enabled(context.Background(), slog.LevelInfo) {
		t.Errorf("handler %T, want *slog.TextHandler at INFO for the Text format", cfg.logger.Handler())
	}

	own := slog.New(slog.DiscardHandler)
	if cfg, err := newConfig([]Option{WithLogger(own)}); err != nil || cfg.logger != own {
		t.Errorf("logger %v (%v), want the one given to WithLogger", cfg.logger, err)
	}
}
