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
	// ErrInfrastructureFault: records in a row failed with the same infrastructure fault
	// (see WithInfrastructureFaultThreshold); a [*InfrastructureFaultError] says which.
	ErrInfrastructureFault = errors.New("lambda: an infrastructure fault hits every record")
)

// InfrastructureFaultError is the Err of the [*BatchError] of an invocation that failed
// for an infrastructure fault: Records records in a row (in the order they finished)
// failed with the same one, Signature, so the adapter started no more records.
type InfrastructureFaultError struct {
	// Signature names the fault: service, operation and error code, for example
	// "DynamoDB PutItem AccessDeniedException".
	Signature string
	// Records is how many records in a row failed with it.
	Records int
	// Err is the first of those records' errors.
	Err error
}

// Error names the fault, the count and the first record's error.
func (e *InfrastructureFaultError) Error() string {
	return fmt.Sprintf("lambda: %d records in a row failed with the same infrastructure fault (%s), so no more were started: %v", e.Records, e.Signature, e.Err)
}

// Is reports true for [ErrInfrastructureFault].
func (e *InfrastructureFaultError) Is(target error) bool { return target == ErrInfrastructureFault }

// Unwrap returns the first record's error.
func (e *InfrastructureFaultError) Unwrap() error { return e.Err }

// BatchError is the error the batch handler returns when it fails the whole invocation.
// Lambda then deletes no record of the batch. The Lambda runtime reports it with
// errorType "BatchError".
type BatchError struct {
	// Err is ErrEntireBatchFailed, ErrUnidentifiedFailure, ErrBatchItemFailuresNotReported
	// or a *InfrastructureFaultError.
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
