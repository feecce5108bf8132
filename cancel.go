package sqsworker

import (
	"errors"
	"fmt"
)

// ReasonCancelled is the Outcome.Reason of a cancelled job.
const ReasonCancelled = "Cancelled"

// ErrCancelled matches (with errors.Is) every error made by [Cancelled]: the job was
// cancelled (package jobs: `sqsworker jobs cancel`), so the host deletes its message
// without running it again, neither retried nor dead-lettered ([OutcomeCancelled]).
var ErrCancelled = errors.New("sqsworker: job cancelled")

// Cancelled returns an error that ends the job as cancelled: [Classify] maps it to
// [OutcomeCancelled] whatever else it wraps. err says why or where (it may be nil).
func Cancelled(err error) error {
	if err == nil {
		return ErrCancelled
	}
	return fmt.Errorf("%w: %w", ErrCancelled, err)
}
