package lambda

import (
	"github.com/sqsworker/sqsworker/internal/hostsettings"
)

// The Lambda adapter's environment variables, read by [OptionsFromEnvironment].
// Durations are Go durations ("2s"). The settings both hosts share
// (SQSWORKER_CONCURRENCY, the backoff, the dead-letter send, the logger) are package
// worker's; AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL are Lambda's own (see
// [LoggerFromEnvironment]).
const (
	// EnvDeadlineMargin is the time kept free before the invocation deadline:
	// [WithDeadlineMargin]; default 2s.
	EnvDeadlineMargin = "SQSWORKER_DEADLINE_MARGIN"
	// EnvFIFOMode is skip-failed-group (default) or stop-at-first-failure: [WithFIFOMode].
	EnvFIFOMode = "SQSWORKER_FIFO_MODE"
	// EnvEntireBatchFailureError, "true", fails the invocation when every record failed:
	// [WithEntireBatchFailureError].
	EnvEntireBatchFailureError = "SQSWORKER_ENTIRE_BATCH_FAILURE_ERROR"
	// EnvReportBatchItemFailures is "false" when the event source mapping lacks
	// ReportBatchItemFailures: [WithReportBatchItemFailures].
	EnvReportBatchItemFailures = "SQSWORKER_REPORT_BATCH_ITEM_FAILURES"
	// EnvInfrastructureFaultThreshold is how many records in a row failing with one
	// infrastructure fault fail the invocation; default 2, 0 off:
	// [WithInfrastructureFaultThreshold].
	EnvInfrastructureFaultThreshold = "SQSWORKER_INFRASTRUCTURE_FAULT_THRESHOLD"
)

// OptionsFromEnvironment returns the options the Lambda adapter's variables (the Env
// constants) ask for, read through getenv (os.Getenv in a program), one for each variable
// set. Pass them to [NewBatchHandler] before the options set in code, so those win. It
// reads no other host's variables.
//
// Errors: every malformed variable at once, each naming its variable.
func OptionsFromEnvironment(getenv func(string) string) ([]Option, error) {
	env := hostsettings.NewEnvironment("lambda: ", getenv)
	var options []Option
	if margin, ok := env.Duration(EnvDeadlineMargin); ok {
		options = append(options, WithDeadlineMargin(margin))
	}
	switch text := env.Value(EnvFIFOMode); text {
	case "":
	case FIFOSkipFailedGroup.String():
		options = append(options, WithFIFOMode(FIFOSkipFailedGroup))
	case FIFOStopAtFirstFailure.String():
		options = append(options, WithFIFOMode(FIFOStopAtFirstFailure))
	default:
		env.Problem("%s=%q: want %s or %s", EnvFIFOMode, text, FIFOSkipFailedGroup, FIFOStopAtFirstFailure)
	}
	if enabled, ok := env.Bool(EnvEntireBatchFailureError); ok {
		options = append(options, WithEntireBatchFailureError(enabled))
	}
	if enabled, ok := env.Bool(EnvReportBatchItemFailures); ok {
		options = append(options, WithReportBatchItemFailures(enabled))
	}
	if n, ok := env.Int(EnvInfrastructureFaultThreshold, 0); ok {
		options = append(options, WithInfrastructureFaultThreshold(n))
	}
	if err := env.Err(); err != nil {
		return nil, err
	}
	return options, nil
}
