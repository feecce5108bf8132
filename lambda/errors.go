package lambda

import (
	"errors"
	"fmt"
)

// Errors a [*BatchError] wraps, one per reason the adapter fails a whole invocation.
var (
	// ErrEntireBatchFailed: every record failed and WithEntireBatchFailureError(true) is set.
	ErrEntireBatchFailed = errors.New("lambda: every record of the batch failed")
	// ErrUnidentifiedFailure: a record failed but has no message id to report it by.
	// Lambda treats an empty or unknown itemIdentifier as a failure of the whole batch
	// anyway; the adapter says so with an error instead of emitting one.
	ErrUnidentifiedFailure = errors.New("lambda: a failed record has no message id to report it by")
	// ErrBatchItemFailuresNotReported: records failed and WithReportBatchItemFailures(false)
	// is set, so the failure can only be reported for the whole invocation.
	ErrBatchItemFailuresNotReported = errors.New("lambda: records failed and the event source mapping does not report batch item failures")
)

// BatchError is the error the batch handler returns when it fails the whole invocation.
// Lambda then deletes no record of the batch. The Lambda runtime reports it with
// errorType "BatchError".
type BatchError struct {
	// Err is ErrEntireBatchFailed, ErrUnidentifiedFailure or ErrBatchItemFailuresNotReported.
	Err error
	// Failed is how many records failed, out of Total.
	Failed, Total int
}

// Error returns Err's text with the counts.
func (e *BatchError) Error() string {
	return fmt.Sprintf("%v (%d of %d records failed)", e.Err, e.Failed, e.Total)
}

// Unwrap returns Err.
func (e *BatchError) Unwrap() error { return e.Err }
