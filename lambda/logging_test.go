package lambda

import (
	"bytes"
	"encoding/json"
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
