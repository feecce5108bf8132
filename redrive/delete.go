package redrive

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// delete deletes confirmed items from the source. Entries that fail are retried alone;
// those that still fail are recorded in NotDeleted (they are now in both queues). A
// failed request is returned as an error.
func (r *run) delete(ctx context.Context, items []*item) error {
	failed, err := r.deleteOnce(ctx, items)
	if err != nil {
		for _, it := range items {
			r.result.NotDeleted = append(r.result.NotDeleted, MessageError{ID: it.message.ID, Error: err.Error()})
		}
		return err
	}
	for _, it := range items {
		text := failed[it]
		delay := r.config.RetryDelay
		for attempt := 2; text != "" && attempt <= r.config.SendAttempts; attempt++ {
			if sleep(ctx, delay) != nil {
				break
			}
			delay *= 2
			again, err := r.deleteOnce(ctx, []*item{it})
			if err != nil {
				break
			}
			text = again[it]
		}
		if text != "" {
			r.result.NotDeleted = append(r.result.NotDeleted, MessageError{ID: it.message.ID, Error: text})
			r.config.Logger.Warn("redrive: message sent but not deleted from the source; it is now in both queues",
				"message_id", it.message.ID, "error", text)
			continue
		}
		r.result.Moved++
		if r.dest.FIFO {
			group := groupOf(it.message)
			r.reordered[group] = append(r.reordered[group], it.message.ID)
		}
	}
	return nil
}

// groupOf returns the message group a message is sent to on a FIFO destination: its
// own group, or, coming from a standard queue, a group of its own (its message id).
func groupOf(message *sqsworker.Message) string {
	if message.GroupID != "" {
		return message.GroupID
	}
	return message.ID
}

// deleteOnce deletes items with DeleteMessageBatch and returns the failed items with
// their error text (an entry missing from the response counts as failed). A failed
// request is returned as an error.
func (r *run) deleteOnce(ctx context.Context, items []*item) (map[*item]string, error) {
	handles := make([]string, len(items))
	for i, it := range items {
		handles[i] = aws.ToString(it.raw.ReceiptHandle)
	}
	failed := map[*item]string{}
	for i, result := range sqsx.DeleteMessages(ctx, r.api, r.config.Source, handles) {
		if callErr, ok := errors.AsType[*sqsx.CallError](result.Err); ok {
			return nil, fmt.Errorf("redrive: deleting %d moved messages from %s: %w", len(items), r.config.Source, callErr.Err)
		}
		if result.Err != nil {
			failed[items[i]] = entryText(result.Err)
		}
	}
	return failed, nil
}
