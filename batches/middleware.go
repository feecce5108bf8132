package batches

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/txjoin"
	"github.com/sqsworker/sqsworker/table"
)

// MiddlewareConfig configures [Batches.Middleware].
type MiddlewareConfig struct {
	// MaxReceiveCount is the queue's redrive policy maxReceiveCount: a failed attempt at
	// that receive count is the job's last (the hosts dead-letter it, reason
	// RetriesExhausted) and ends it as dead-lettered. Zero: unknown, and only
	// permanent failures and [sqsworker.JobMaxAttempts] limits end a job without
	// success; a job the redrive policy moves by itself then stays pending until it is
	// redriven and ends.
	MaxReceiveCount int
}

// Middleware returns a [sqsworker.Middleware] that counts the end of each batch job (a
// message with [AttributeBatch]; others pass through): success, or an end without
// success (a permanent failure, its last attempt failed or deferred, or cancelled);
// other retries and deferrals are not ends. The handler's context carries the batch ([FromContext]).
//
// Order: inside sqsworker.DelayMiddleware and the fleetlimit middleware (their hops
// re-send the job and return nil, which this middleware would count as a success), and
// outside the jobs records middleware (a cancelled job reaches it as
// sqsworker.Cancelled, an end) and the idempotency middleware. With that middleware on a DynamoDB store whose records are
// kept at least Config.Retention (idempotency.Config.TTL), a success is counted in the
// transaction that completes the job's record (no marker: one item write beyond the
// completion) and a duplicate the record answers counts nothing; other ends, and
// every end without it, write the job's marker with the counts.
//
// A message whose attribute is not one [Batch.Add] writes, or that has no job id, fails
// permanently (reason "BatchAttributeInvalid") and its handler does not run. An end the
// batch refuses ([ErrRefused]) is logged at Error and the job's outcome stands. When the
// count or the callback's send fails (DynamoDB or SQS unavailable), the job is retried,
// whatever its handler returned, so its end is counted at a later delivery: put the
// idempotency middleware inside so a succeeded job does not run again.
func (b *Batches) Middleware(config MiddlewareConfig) sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			value, ok := message.StringAttribute(AttributeBatch)
			if !ok {
				return next.Handle(ctx, message)
			}
			r, err := parseRef(value)
			if err == nil {
				_, err = table.BatchJobKey(r.id, message.JobID())
			}
			if err != nil {
				return sqsworker.Permanent("BatchAttributeInvalid", fmt.Errorf("batches: message %s: %w", message.ID, err))
			}
			bt := &Batch{batches: b, ref: r, inJob: true}
			join, joinedCount := b.join(r, message.JobID())
			handlerErr := next.Handle(txjoin.With(context.WithValue(ctx, batchKey{}, bt), join), message)
			e, final := ending(config, message, handlerErr)
			if !final {
				return handlerErr
			}
			storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultStoreTimeout)
			defer cancel()
			logger := b.config.Logger.With(slog.String("batch_id", r.id), slog.String("job_id", message.JobID()), slog.String("message_id", message.ID))
			err = joinedCount.refusal()
			if err == nil {
				err = b.countEnd(storeCtx, r, message.JobID(), e, join)
			}
			switch {
			case errors.Is(err, ErrRefused):
				logger.ErrorContext(ctx, "batches: the batch refused the job's end; it is not counted", slog.Any("error", err))
				return handlerErr
			case err != nil:
				logger.WarnContext(ctx, "batches: counting the job's end failed; the job is retried", slog.String("end", string(e)), slog.Any("error", err))
				return fmt.Errorf("batches: job %s of batch %s ended (%s: %s) but counting it failed; retried: %w", message.JobID(), r.id, e, errorText(handlerErr), err)
			}
			return handlerErr
		})
	}
}

// countEnd counts the end of a job, unless the idempotency middleware inside counted
// its success with the record's completion (txjoin) or a completed record answered the
// delivery, then checks whether the batch is done. With a bound join, the count holds
// the check that the job's record is not completed.
func (b *Batches) countEnd(ctx context.Context, r ref, jobID string, e end, join *txjoin.Join) error {
	check, bound := join.Bound()
	_, committed := join.CommittedItems()
	if !bound || e != endSucceeded || !(committed || join.Answered()) {
		var recordCheck *types.ConditionCheck
		if bound {
			recordCheck = &check
		}
		if _, err := b.count(ctx, r, jobID, e, recordCheck); err != nil {
			return err
		}
	}
	return b.afterCount(ctx, r, jobID)
}

// ending says whether the handler's outcome ends the job, and how: the hosts' own
// rule (settle.Exhaust) decides whether a failed or deferred attempt was the last.
func ending(config MiddlewareConfig, message *sqsworker.Message, handlerErr error) (end, bool) {
	outcome := sqsworker.Classify(handlerErr)
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
		return endSucceeded, true
	case sqsworker.OutcomeDeadLetter, sqsworker.OutcomeCancelled:
		return endDead, true
	}
	if settle.Exhaust(settle.Action{Outcome: outcome}, message, config.MaxReceiveCount, true).Exhausted {
		return endDead, true
	}
	return "", false
}

// CallbackOf returns the batch id and kind ("success" or "complete") of a batch's
// callback job, and false for any other message.
func CallbackOf(message *sqsworker.Message) (batchID, kind string, ok bool) {
	value, found := message.StringAttribute(AttributeBatchCallback)
	if !found {
		return "", "", false
	}
	id, kind, _ := strings.Cut(value, ":")
	if validID(id) != nil || (kind != "success" && kind != "complete") {
		return "", "", false
	}
	return id, kind, true
}

func errorText(err error) string {
	if err == nil {
		return "success"
	}
	return err.Error()
}
