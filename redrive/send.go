package redrive

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqsx"
)

// moveBatch sends batch, retries failed entries alone, then deletes the confirmed ones.
func (r *run) moveBatch(ctx context.Context, batch []*item) error {
	confirmed, err := r.send(ctx, batch)
	if err != nil {
		return err
	}
	if len(confirmed) == 0 {
		return nil
	}
	return r.delete(ctx, confirmed)
}

// send sends batch and returns the items SQS confirmed. Items that fail on every
// attempt are recorded in SendFailed and held (released at the end, so they stay in
// the source). A failed request is returned as an error; its items are held too.
func (r *run) send(ctx context.Context, batch []*item) ([]*item, error) {
	confirmed, failed, err := r.sendOnce(ctx, batch)
	if err != nil {
		for _, it := range batch {
			r.hold(it.message)
		}
		return nil, err
	}
	for _, failure := range failed {
		it, entryErr := failure.item, failure.err
		delay := r.config.RetryDelay
		for attempt := 2; sqsx.Retryable(entryErr) && attempt <= r.config.SendAttempts; attempt++ {
			if err := sleep(ctx, delay); err != nil {
				r.hold(it.message)
				return confirmed, fmt.Errorf("redrive: move stopped: %w", err)
			}
			delay *= 2
			ok, again, err := r.sendOnce(ctx, []*item{it})
			if err != nil {
				r.hold(it.message)
				return confirmed, err
			}
			if len(ok) == 1 {
				entryErr = nil
				confirmed = append(confirmed, it)
				break
			}
			entryErr = again[0].err
		}
		if entryErr != nil {
			text := entryText(entryErr)
			r.result.SendFailed = append(r.result.SendFailed, MessageError{ID: it.message.ID, Error: text})
			r.config.Logger.Warn("redrive: send failed; message left in the source", "message_id", it.message.ID, "error", text)
			r.hold(it.message)
		}
	}
	return confirmed, nil
}

type entryFailure struct {
	item *item
	err  error
}

// sendOnce sends one SendMessageBatch request (batch is packed to fit one).
func (r *run) sendOnce(ctx context.Context, batch []*item) (confirmed []*item, failed []entryFailure, err error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, it := range batch {
		entries[i] = r.entry(it)
	}
	r.result.Batches++
	for i, result := range sqsx.SendMessages(ctx, r.api, r.config.Destination, entries, r.maxBytes) {
		if callErr, ok := errors.AsType[*sqsx.CallError](result.Err); ok {
			return nil, nil, fmt.Errorf("redrive: sending %d messages to %s: %w", len(batch), r.config.Destination, callErr.Err)
		}
		if result.Err != nil {
			failed = append(failed, entryFailure{item: batch[i], err: result.Err})
			continue
		}
		r.start.sent[result.MessageID] = true
		confirmed = append(confirmed, batch[i])
	}
	return confirmed, failed, nil
}

// entryText is a failed entry's error as reported: "CODE: MESSAGE".
func entryText(err error) string {
	if entry, ok := errors.AsType[*sqsx.EntryError](err); ok {
		return fmt.Sprintf("%s: %s", entry.Code, entry.Message)
	}
	return err.Error()
}

// entry builds the send entry for it: body and message attributes unchanged, plus
// AttributeRedriveCount when it fits; the AWSTraceHeader system attribute kept, so a
// redriven message stays in its producer's trace; on a FIFO destination the message
// group kept and a new deduplication id.
func (r *run) entry(it *item) types.SendMessageBatchRequestEntry {
	entry := types.SendMessageBatchRequestEntry{
		MessageBody:       it.raw.Body,
		MessageAttributes: it.attributes,
	}
	if header := it.raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; header != "" {
		entry.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(header)},
		}
	}
	if r.dest.FIFO {
		group := groupOf(it.message)
		original := it.message.DeduplicationID
		if original == "" {
			original = it.message.ID
		}
		entry.MessageGroupId = aws.String(group)
		entry.MessageDeduplicationId = aws.String(NextDeduplicationID(original))
	}
	return entry
}
