package lambda

import (
	"io"
	"log/slog"
	"strings"
)

// LoggerFromEnvironment returns the logger that Lambda's advanced logging controls ask for,
// writing to w (the function's stdout, which Lambda sends to CloudWatch Logs), from the
// variables Lambda sets (read through getenv, for example os.Getenv):
//
//   - AWS_LAMBDA_LOG_FORMAT "JSON" gives a [slog.JSONHandler] (one JSON object per line, as
//     Lambda's JSON log format expects); anything else, or unset ("Text"), a
//     [slog.TextHandler].
//   - AWS_LAMBDA_LOG_LEVEL is the lowest level written: TRACE (below [slog.LevelDebug]),
//     DEBUG, INFO, WARN, ERROR, FATAL (above [slog.LevelError]), case-insensitive. Lambda sets
//     it only with the JSON format; unset or unknown, INFO.
//
// See "Configuring advanced logging controls for Lambda functions" in the AWS Lambda
// Developer Guide (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html).
func LoggerFromEnvironment(getenv func(string) string, w io.Writer) *slog.Logger {
	options := &slog.HandlerOptions{Level: logLevel(getenv("AWS_LAMBDA_LOG_LEVEL"))}
	if strings.EqualFold(getenv("AWS_LAMBDA_LOG_FORMAT"), "JSON") {
		return slog.New(slog.NewJSONHandler(w, options))
	}
	return slog.New(slog.NewTextHandler(w, options))
}

// logLevel maps a Lambda application log level to a slog level; INFO when unset or unknown.
func logLevel(name string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "TRACE":
		return slog.LevelDebug - 4
	case "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR":
		return slog.LevelError
	case "FATAL":
		return slog.LevelError + 4
	default:
		return slog.LevelInfo
	}
}
