package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/producer"
)

// StreamHandler is the Lambda relay of a DynamoDB outbox: the handler of the outbox
// table's stream (an event source mapping with FunctionResponseTypes
// ["ReportBatchItemFailures"] and the stream view NEW_IMAGE or NEW_AND_OLD_IMAGES). It
// publishes the entries of the batch's INSERT records with SendMessageBatch (through a
// [producer.Producer]), then deletes them; entries that can never be sent are marked
// failed. Records that are not new outbox entries (its own deletes and marks, other
// items of the table) are skipped.
//
// The first record whose entry was not sent, or not deleted after its send, is reported
// in batchItemFailures by its sequence number; Lambda then retries the batch from it
// (AWS Lambda Developer Guide, "Configuring partial batch response with DynamoDB and
// Lambda"), so later records may be sent again: the FIFO deduplication id and the
// consumer's idempotency absorb the repeats.
//
// The stream is the fast path, not the only one: a mapping that starts at LATEST skips
// the records written before it is active, the stream keeps records 24 hours, and the
// mapping gives up on a record after its maximum retry attempts (to its on-failure
// destination). Every entry it did not publish stays in the table: run a container relay
// ([NewDynamoDBRelay], with MinAge so that it sweeps only what the stream left, say one
// minute) or a scheduled one beside it, and alarm on the oldest unpublished entry's age
// it reports ([EventBacklog]). Configure the mapping with StartingPosition TRIM_HORIZON,
// BisectBatchOnFunctionError, a finite MaximumRetryAttempts and an on-failure
// destination.
//
// Order: DynamoDB Streams orders records per item, and each entry is an item of its own,
// so entries of one FIFO message group can arrive in different shards and invocations.
// Within one batch the handler keeps the batch's order per group; where a group's order
// across transactions matters, use the container relay ([NewDynamoDBRelay]), which reads
// entries in creation order.
type StreamHandler struct {
	api      DynamoDBAPI
	outbox   *DynamoDB
	producer *producer.Producer
	observer Observer
}

// NewStreamHandler returns the stream relay of o. observer may be nil.
func NewStreamHandler(api DynamoDBAPI, o *DynamoDB, p *producer.Producer, observer Observer) (*StreamHandler, error) {
	if api == nil || o == nil || p == nil {
		return nil, errors.New("outbox: NewStreamHandler needs a DynamoDB client, an outbox and a producer")
	}
	if observer == nil {
		observer = nopObserver{}
	}
	return &StreamHandler{api: api, outbox: o, producer: p, observer: observer}, nil
}

// Handle publishes the new entries of event and returns the record to retry. It
// returns an error only for an event it cannot read at all (none: every record is
// answered in the response).
//
// No entry stalls the shard: an entry that can never be sent (refused by SQS, or one
// that cannot be decoded) is marked failed with its reason, by a conditional update, and
// counts as processed; so does an entry of a parked FIFO group, which stays unpublished
// for the container relay ([NewDynamoDBRelay]) to send once the group goes on. Only a
// transient failure (the send, or the write that records it) is reported, and only
// once: the response names the first such record, from which Lambda retries.
func (h *StreamHandler) Handle(ctx context.Context, event events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var items []dynamoItem
	var sequence []string // the record of each item
	ordered := false
	for _, record := range event.Records {
		if record.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		it, ok := decodeEntry(imageGetter(record.Change.NewImage))
		if !ok || it.state == stateFailed || it.state == stateParked {
			continue
		}
		items = append(items, it)
		sequence = append(sequence, record.Change.SequenceNumber)
		ordered = ordered || it.entry.Ordered()
	}
	if len(items) == 0 {
		return events.DynamoDBEventResponse{}, nil
	}
	parked := map[string]bool{}
	if ordered {
		var err error
		if parked, err = h.outbox.parkedGroups(ctx, h.api); err != nil {
			h.observer.ObserveOutbox(ctx, Event{Kind: EventStoreError, Store: "dynamodb-stream", Time: time.Now(), Err: err})
			return retryFrom(sequence[0]), nil
		}
	}
	entries := make([]Entry, len(items))
	preset := make([]outcome, len(items))
	for i, it := range items {
		entries[i] = it.entry
		switch {
		case it.damage != nil:
			preset[i] = outcome{refused: it.damage}
		case parked[it.groupKey()]:
			preset[i] = outcome{held: fmt.Errorf("outbox: message group %q is parked: the container relay sends the entry once it goes on", it.entry.GroupID)}
		}
	}
	outcomes := publish(ctx, h.producer, entries, preset)
	var published []string
	for i, o := range outcomes {
		if o.published() {
			published = append(published, entries[i].ID)
		}
	}
	removeErr := h.outbox.remove(ctx, h.api, published)
	first := -1 // the first record to retry
	for i, o := range outcomes {
		entry := &entries[i]
		ev := Event{Store: "dynamodb-stream", Time: time.Now(), Entry: entry}
		switch {
		case o.published() && removeErr == nil:
			ev.Kind, ev.MessageID = EventPublished, o.messageID
		case o.published():
			ev.Kind, ev.Err = EventRetry, fmt.Errorf("outbox: sent as %s but not deleted: %w", o.messageID, removeErr)
		case o.refused != nil:
			attempts := entry.Attempts + 1
			if err := h.outbox.markFailed(ctx, h.api, items[i], "", attempts, o.refused); err != nil {
				ev.Kind, ev.Err = EventRetry, err
			} else {
				ev.Kind, ev.Err = EventFailed, o.refused
				entry.Attempts, entry.FailedAt, entry.FailureReason = attempts, ev.Time, o.refused.Error()
			}
		case o.held != nil:
			ev.Kind, ev.Err = EventRetry, o.held // stays unpublished; not a failure of the record
		default:
			ev.Kind, ev.Err = EventRetry, o.retry
		}
		if ev.Kind == EventRetry && o.held == nil && first < 0 {
			first = i
		}
		h.observer.ObserveOutbox(ctx, ev)
	}
	if first < 0 {
		return events.DynamoDBEventResponse{}, nil
	}
	return retryFrom(sequence[first]), nil
}

// retryFrom is the response that makes Lambda retry from the record sequenceNumber
// (Lambda checkpoints at the lowest reported sequence number: reporting more records
// changes nothing; AWS Lambda Developer Guide, "Configuring partial batch response with
// DynamoDB and Lambda").
func retryFrom(sequenceNumber string) events.DynamoDBEventResponse {
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: sequenceNumber}}}
}

// imageGetter reads the string and number attributes of a stream image.
func imageGetter(image map[string]events.DynamoDBAttributeValue) func(string) (string, bool) {
	return func(name string) (string, bool) {
		value, has := image[name]
		if !has {
			return "", false
		}
		switch value.DataType() {
		case events.DataTypeString:
			return value.String(), true
		case events.DataTypeNumber:
			return value.Number(), true
		}
		return "", false
	}
}
