package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// Reasons of the permanent failures of [JSONHandler] and [RegisterJSON] (the
// dead-letter reason attribute, [sqsworker.Permanent]).
const (
	// ReasonNoJobRecord: the handler runs neither inside [Store.Middleware] nor inside
	// the idempotency middleware, so its result would be kept nowhere. The job is not
	// run; fix the chain and redrive it.
	ReasonNoJobRecord = "NoJobRecord"
	// ReasonResultNotKept: the job ran and succeeded, but [SetResult] refused its result
	// (over [MaxResultBytes] without Config.LargeResults, over MaxLargeResultBytes, or not
	// encodable as JSON). The job goes to the dead-letter queue with the error rather than
	// lose its result; redriving it runs it again, so give such a job an idempotency key
	// (its side effects are then not repeated).
	ReasonResultNotKept = "ResultNotKept"
)

// JSONHandler returns a handler for jobs whose body is the JSON form of a T (decoded
// strictly, as [sqsworker.JSONHandler]: a malformed body fails permanently with reason
// "MalformedBody") and whose work returns a result: the R that handle returns with a nil
// error is kept as the job's result ([SetResult]): in the job's record inside
// [Store.Middleware], and in the completed idempotency record inside the idempotency
// middleware, so a duplicate's record has it too.
//
// A result that cannot be kept fails the message permanently with
// [ReasonResultNotKept], and a handler outside both middlewares is not called and fails
// with [ReasonNoJobRecord]: a result is never dropped silently. An error from handle is
// returned as it is (retried, or dead-lettered when permanent).
func JSONHandler[T, R any](handle func(ctx context.Context, job T) (R, error)) sqsworker.Handler {
	return sqsworker.JSONHandler(keepingResult(handle))
}

// RegisterJSON registers [JSONHandler](handle) for jobType on mux with the per-type
// options, as [sqsworker.RegisterJSON] does for a handler without a result.
func RegisterJSON[T, R any](mux *sqsworker.ServeMux, jobType string, handle func(ctx context.Context, job T) (R, error), options ...sqsworker.JobOption) {
	sqsworker.RegisterJSON(mux, jobType, keepingResult(handle), options...)
}

// keepingResult turns a handler with a result into one that keeps it with SetResult.
func keepingResult[T, R any](handle func(ctx context.Context, job T) (R, error)) func(context.Context, T) error {
	return func(ctx context.Context, job T) error {
		if !resultHasAHome(ctx) {
			return sqsworker.Permanent(ReasonNoJobRecord, errors.New("jobs: the handler's result would be kept nowhere: run it inside jobs.Store.Middleware or idempotency.Middleware"))
		}
		result, err := handle(ctx, job)
		if err != nil {
			return err
		}
		if err := SetResult(ctx, result); err != nil {
			return sqsworker.Permanent(ReasonResultNotKept, fmt.Errorf("jobs: the job succeeded but its result was not kept: %w", err))
		}
		return nil
	}
}

// resultHasAHome reports whether SetResult would keep a result: inside a recorded job or
// inside the idempotency middleware. Handing the idempotency middleware an empty result
// before the handler runs changes nothing: the handler's result replaces it, and a
// handler that sets none completes the record without one, as before.
func resultHasAHome(ctx context.Context) bool {
	if _, err := attemptOf(ctx); err == nil {
		return true
	}
	return idempotency.SetResult(ctx, nil)
}
