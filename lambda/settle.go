package lambda

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// changeVisibility sets every failed record's visibility timeout, in batches of ten per
// queue: a rescheduled record's to its delay, a released one's to 0. A failed change is
// logged and reported; the record is still reported failed and comes back after the
// queue's visibility timeout instead.
func (b *BatchHandler) changeVisibility(ctx context.Context, records []*record) {
	var failed []*record
	for _, r := range records {
		if r.failed && !r.untouched {
			failed = append(failed, r)
		}
	}
	b.calls.byQueue(ctx, failed, "ChangeMessageVisibilityBatch", func(client SQSAPI, queueURL string, batch []*record) []sqsx.Result {
		changes := make([]sqsx.VisibilityChange, len(batch))
		for i, r := range batch {
			changes[i] = sqsx.VisibilityChange{ReceiptHandle: r.message.ReceiptHandle, Timeout: r.action.Visibility}
		}
		return sqsx.ChangeVisibility(ctx, client, queueURL, changes)
	}, func(r *record, err error) {
		if r.released != "" {
			b.settler.Released(ctx, r.delivery, r.released)
			return
		}
		b.settler.Rescheduled(ctx, r.delivery, r.action, err)
	})
}

// respond builds the partial batch response, or the invocation error, and reports the
// records that succeeded. fault, if not nil, is the infrastructure fault that fails the
// invocation.
func (b *BatchHandler) respond(ctx context.Context, records []*record, fault *InfrastructureFaultError) (events.SQSEventResponse, error) {
	failures := make([]events.SQSBatchItemFailure, 0) // never null: {"batchItemFailures":[]}
	failed, unidentified := 0, 0
	for _, r := range records {
		if !r.failed {
			continue
		}
		failed++
		if r.message.ID == "" {
			unidentified++
			continue
		}
		failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: r.message.ID})
	}
	response := events.SQSEventResponse{BatchItemFailures: failures}
	var reason error
	switch {
	case unidentified > 0:
		reason = ErrUnidentifiedFailure
	case failed > 0 && !b.cfg.reportBatchItemFailures:
		reason = ErrBatchItemFailuresNotReported
	case fault != nil:
		reason = fault
	case failed > 0 && failed == len(records) && b.cfg.entireBatchFailureError:
		reason = ErrEntireBatchFailed
	default:
		now := time.Now()
		for _, r := range records {
			if !r.failed {
				b.settler.DeletedAt(ctx, r.delivery, now) // the event source mapping deletes it
			}
		}
		return response, nil
	}
	for _, r := range records {
		if r.untouched {
			b.settler.Released(ctx, r.delivery, "not started: the invocation fails for an infrastructure fault; back after its visibility timeout")
		}
	}
	if b.cfg.reportBatchItemFailures && fault == nil {
		for _, r := range records {
			if !r.failed {
				b.settler.Released(ctx, r.delivery, "the whole invocation failed; Lambda deletes no record")
			}
		}
	} else {
		// Lambda deletes no record of a failed invocation: delete those that succeeded
		// (or were dead-lettered), so they do not run again.
		b.deleteSucceeded(ctx, records)
	}
	err := &BatchError{Err: reason, Failed: failed, Total: len(records)}
	b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: failing the whole invocation", append(requestAttrs(ctx), slog.Any("error", err))...)
	return response, err
}

// deleteSucceeded deletes the records that succeeded, for a mapping that does not report
// batch item failures and so will delete none of them after an invocation error.
func (b *BatchHandler) deleteSucceeded(ctx context.Context, records []*record) {
	var succeeded []*record
	for _, r := range records {
		if !r.failed {
			succeeded = append(succeeded, r)
		}
	}
	b.calls.byQueue(ctx, succeeded, "DeleteMessageBatch", func(client SQSAPI, queueURL string, batch []*record) []sqsx.Result {
		handles := make([]string, len(batch))
		for i, r := range batch {
			handles[i] = r.message.ReceiptHandle
		}
		return sqsx.DeleteMessages(ctx, client, queueURL, handles)
	}, func(r *record, err error) {
		if err != nil {
			b.settler.DeleteFailed(ctx, r.delivery, err)
			return
		}
		b.settler.Deleted(ctx, r.delivery)
	})
}

// abandonGrace bounds how long a handler whose context ended may take to return before
// it is abandoned: 1 s, or half the deadline margin when that is less.
const abandonGrace = time.Second
