package lambda

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsFromEnvironmentSetWhatEachVariableSays(t *testing.T) {
	options, err := OptionsFromEnvironment(envOf(map[string]string{
		EnvDeadlineMargin: "3s", EnvFIFOMode: "stop-at-first-failure", EnvEntireBatchFailureError: "true",
		EnvReportBatchItemFailures: "false", EnvInfrastructureFaultThreshold: "0",
		"SQSWORKER_HANDLER_TIMEOUT": "soon", "SQSWORKER_QUEUES": "=0", // the poller's: not read here
	}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := newConfig(options)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.deadlineMargin != 3*time.Second || cfg.fifoMode != FIFOStopAtFirstFailure || !cfg.entireBatchFailureError ||
		cfg.reportBatchItemFailures || cfg.faultThreshold != 0 {
		t.Errorf("config %+v, want margin 3s, stop-at-first-failure, entire-batch error, no item failures, threshold 0", cfg)
	}
	if options, err := OptionsFromEnvironment(envOf(nil)); err != nil || len(options) != 0 {
		t.Errorf("empty environment: %d options, error %v; want none", len(options), err)
	}
}

func TestOptionsFromEnvironmentNameEveryMalformedVariable(t *testing.T) {
	_, err := OptionsFromEnvironment(envOf(map[string]string{
		EnvDeadlineMargin: "2", EnvFIFOMode: "strict", EnvEntireBatchFailureError: "yes please",
		EnvReportBatchItemFailures: "nope", EnvInfrastructureFaultThreshold: "-1",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 5 {
		t.Errorf("%d problems, want 5:\n%v", len(lines), err)
	}
	for _, name := range []string{EnvDeadlineMargin, EnvFIFOMode, EnvEntireBatchFailureError, EnvReportBatchItemFailures, EnvInfrastructureFaultThreshold} {
		if !strings.Contains(err.Error(), "lambda: "+name+"=") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}
