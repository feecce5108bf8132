package worker

import (
	"context"
	"log/slog"
	"testing"
)

func TestLambdaLoggingControlsChooseTheLambdaLogger(t *testing.T) {
	inLambda := map[string]string{EnvRuntimeAPI: "127.0.0.1:9001", EnvLambdaLogFormat: "JSON", EnvLambdaLogLevel: "WARN"}
	env, err := readEnv(func(name string) string { return inLambda[name] })
	if err != nil {
		t.Fatal(err)
	}
	logger := env.logger()
	if _, ok := logger.Handler().(*slog.JSONHandler); !ok {
		t.Fatalf("handler = %T, want *slog.JSONHandler", logger.Handler())
	}
	if logger.Enabled(context.Background(), slog.LevelInfo) || !logger.Enabled(context.Background(), slog.LevelWarn) {
		t.Fatal("want INFO off and WARN on at AWS_LAMBDA_LOG_LEVEL=WARN")
	}
}

func TestSQSWorkerLogVariablesWinOverLambdaLoggingControls(t *testing.T) {
	cases := map[string]map[string]string{
		"SQSWORKER_LOG_LEVEL set":  {EnvRuntimeAPI: "127.0.0.1:9001", EnvLambdaLogLevel: "ERROR", EnvLogLevel: "debug"},
		"SQSWORKER_LOG_FORMAT set": {EnvRuntimeAPI: "127.0.0.1:9001", EnvLambdaLogFormat: "JSON", EnvLogFormat: "text"},
		"not in Lambda":            {EnvLambdaLogFormat: "JSON", EnvLambdaLogLevel: "ERROR"},
		"no logging configuration": {EnvRuntimeAPI: "127.0.0.1:9001"},
	}
	for name, vars := range cases {
		if logger := lambdaLogger(func(n string) string { return vars[n] }); logger != nil {
			t.Errorf("%s: lambdaLogger chose the Lambda logger, want the SQSWORKER_LOG_* one", name)
		}
	}
}
