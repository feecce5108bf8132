package otelsqsworker

import (
	"context"
	"errors"

	"github.com/aws/smithy-go"
)

var (
	errNilSendAPI       = errors.New("otelsqsworker: NewSender: nil SQS client")
	errBatchEntryFailed = errors.New("otelsqsworker: SQS refused entries of the batch")
)

// errorType is an error's error.type: the AWS error code of an API error
// ("AWS.SimpleQueueService.NonExistentQueue", ...), "BatchEntryFailed" for entries SQS
// refused, "timeout" or "canceled" for an ended context, "_OTHER" for anything else (the
// convention's fallback), so its values stay few.
func errorType(err error) string {
	var api smithy.APIError
	switch {
	case errors.Is(err, errBatchEntryFailed):
		return "BatchEntryFailed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &api):
		return api.ErrorCode()
	}
	return "_OTHER"
}
