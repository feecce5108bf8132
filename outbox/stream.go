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
// [producer.Producer]), then deletes them; refused entries are marked failed. Records
// that are not new outbox entries (its own deletes and marks, other items of the table)
// are skipped.
//
// A record whose entry was not sent, or not deleted after its send, is reported in
// batchItemFailures by its sequence number; Lambda then retries the batch from the
// earliest failed record (AWS Lambda Developer Guide, "Configuring partial batch response
// with DynamoDB and Lambda"), so later records may be sent again: the FIFO deduplication
// id and the consumer's idempotency absorb the repeats.
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

// Handle publishes the new entries of event and returns the records to retry. It
// returns an error only for an event it cannot read at all (none: every record is
// answered in the response).
func (h *StreamHandler) Handle(ctx context.Context, event events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var entries []Entry
	var sequence []string // the record of each entry
	var failures []events.DynamoDBBatchItemFailure
	for _, record := range event.Records {
		if record.EventName != string(events.DynamoDBOperationTypeInsert) {
			continue
		}
		image := record.Change.NewImage
		entry, state, ok, err := decodeEntry(func(name string) (string, bool) {
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
		})
		if !ok || state == stateFailed {
			continue
		}
		if err != nil { // a damaged entry: keep it, visible as failed
			if markErr := h.outbox.markFailed(ctx, h.api, entry.ID, err); markErr != nil {
				failures = append(failures, events.DynamoDBBatchItemFailure{ItemIdentifier: record.Change.SequenceNumber})
			}
			continue
		}
		entries = append(entries, entry)
		sequence = append(sequence, record.Change.SequenceNumber)
	}
	if len(entries) == 0 {
		return events.DynamoDBEventResponse{BatchItemFailures: failures}, nil
	}
	outcomes := publish(ctx, h.producer, entries)
	var published []string
	for i, o := range outcomes {
		if o.published() {
			published = append(published, entries[i].ID)
		}
	}
	removeErr := h.outbox.remove(ctx, h.api, published)
	for i, o := range outcomes {
		entry := &entries[i]
		ev := Event{Store: "dynamodb-stream", Time: time.Now(), Entry: entry}
		switch {
		case o.published() && removeErr == nil:
			ev.Kind, ev.MessageID = EventPublished, o.messageID
		case o.published():
			ev.Kind, ev.Err = EventRetry, fmt.Errorf("outbox: sent as %s but not deleted: %w", o.messageID, removeErr)
		case o.refused != nil:
			if err := h.outbox.markFailed(ctx, h.api, entry.ID, o.refused); err != nil {
				ev.Kind, ev.Err = EventRetry, err
			} else {
				ev.Kind, ev.Err = EventFailed, o.refused
			}
		default:
			ev.Kind, ev.Err = EventRetry, o.retry
		}
		if ev.Kind == EventRetry {
			failures = append(failures, events.DynamoDBBatchItemFailure{ItemIdentifier: sequence[i]})
		}
		h.observer.Observe(ctx, ev)
	}
	return events.DynamoDBEventResponse{BatchItemFailures: failures}, nil
}
