package worker

import (
	"log/slog"
	"os"
	"strings"

	"github.com/sqsworker/sqsworker/lambda"
)

// Lambda's advanced logging controls (AWS Lambda Developer Guide, "Configuring advanced
// logging controls for Lambda functions"): the log format and application log level of the
// function's configuration, which Lambda passes to the runtime in these variables.
const (
	EnvLambdaLogFormat = "AWS_LAMBDA_LOG_FORMAT"
	EnvLambdaLogLevel  = "AWS_LAMBDA_LOG_LEVEL"
)

// lambdaLogger returns the default logger of a Lambda function when the function's logging
// configuration says how to log and SQSWORKER_LOG_FORMAT and SQSWORKER_LOG_LEVEL do not
// (they win, as Settings.Logger wins over both): lambda.LoggerFromEnvironment on stderr.
// It returns nil outside Lambda or when neither Lambda variable is set.
func lambdaLogger(getenv func(string) string) *slog.Logger {
	set := func(name string) bool { return strings.TrimSpace(getenv(name)) != "" }
	if !set(EnvRuntimeAPI) || set(EnvLogFormat) || set(EnvLogLevel) || (!set(EnvLambdaLogFormat) && !set(EnvLambdaLogLevel)) {
		return nil
	}
	return lambda.LoggerFromEnvironment(getenv, os.Stderr)
}
