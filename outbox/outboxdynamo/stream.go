package outboxdynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// StreamRecord is one record of the outbox table's DynamoDB stream, as a stream reader
// received it (dynamostream.Handler converts a Lambda event's records).
type StreamRecord struct {
	// EventName is the record's eventName: "INSERT", "MODIFY" or "REMOVE". Only INSERT
	// records are new entries.
	EventName string
	// SequenceNumber is the record's sequence number, the id [StreamRelay.Publish]
	// returns for the record to retry from.
	SequenceNumber string
	// NewImage holds the item's new image: its string attributes, and its number
	// attributes as their decimal text. Other attribute types are left out.
	NewImage map[string]string
}

// StreamRelay publishes the entries of a DynamoDB outbox table's stream records: the
// fast path of the outbox, behind a Lambda function on the stream (dynamostream.Handler,
// the package that links aws-lambda-go) or any other stream reader. It publishes the
// entries of a batch's INSERT records with SendMessageBatch (through a
// [producer.Producer]), then deletes them; entries that can never be sent are marked
// failed. Records that are not new outbox entries (its own deletes and marks, other
// items of the table) are skipped.
//
// The stream is the fast path, not the only one: a mapping that starts at LATEST skips
// the records written before it is active, the stream keeps records 24 hours, and the
// mapping gives up on a record after its maximum retry attempts (to its on-failure
// destination). Every entry it did not publish stays in the table: run a container relay
// ([NewRelay], with MinAge so that it sweeps only what the stream left, say one minute)
// or a scheduled one beside it, and alarm on the oldest unpublished entry's age it
// reports ([outbox.EventBacklog]).
//
// Order: DynamoDB Streams orders records per item, and each entry is an item of its own,
// so entries of one FIFO message group can arrive in different shards and invocations.
// Within one batch the relay keeps the batch's order per group; where a group's order
// across transactions matters, use the container relay ([NewRelay]), which reads
// entries in creation order.
type StreamRelay struct {
	api      API
	outbox   *Outbox
	producer *producer.Producer
	observer outbox.Observer
}

// NewStreamRelay returns the stream relay of o. observer may be nil; it is told what
// the relay does, with [outbox.Event.Store] "dynamodb-stream".
func NewStreamRelay(api API, o *Outbox, p *producer.Producer, observer outbox.Observer) (*StreamRelay, error) {
	if api == nil || o == nil || p == nil {
		return nil, errors.New("outbox: NewStreamRelay needs a DynamoDB client, an outbox and a producer")
	}
	if observer == nil {
		observer = outbox.ObserverFunc(func(context.Context, outbox.Event) {})
	}
	return &StreamRelay{api: api, outbox: o, producer: p, observer: observer}, nil
}

// Publish publishes the new entries of records (one stream batch, in its order) and
// returns the sequence number of the first record to retry, or "" when every record is
// done. A Lambda handler reports it as its one batch item failure; Lambda then retries
// the batch from it (AWS Lambda Developer Guide, "Configuring partial batch response
// with DynamoDB and Lambda"), so later records may be sent again: the FIFO
// deduplication id and the consumer's idempotency absorb the repeats.
//
// No entry stalls the shard: an entry that can never be sent (refused by SQS, or one
// that cannot be decoded) is marked failed with its reason, by a conditional update, and
// counts as done; so does an entry of a parked FIFO group, which stays unpublished for
// the container relay ([NewRelay]) to send once the group goes on. Only a transient
// failure (the send, or the write that records it) makes a record to retry: the first
// such record.
func (h *StreamRelay) Publish(ctx context.Context, records []StreamRecord) (retryFrom string) {
	var items []dynamoItem
	var sequence []string // the record of each item
	ordered := false
	for _, record := range records {
		if record.EventName != "INSERT" {
			continue
		}
		it, ok := decodeEntry(imageGetter(record.NewImage))
		if !ok || it.state == stateFailed || it.state == stateParked {
			continue
		}
		items = append(items, it)
		sequence = append(sequence, record.SequenceNumber)
		ordered = ordered || it.entry.Ordered()
	}
	if len(items) == 0 {
		return ""
	}
	parked := map[string]bool{}
	if ordered {
		var err error
		if parked, err = h.outbox.parkedGroups(ctx, h.api); err != nil {
			h.observer.ObserveOutbox(ctx, outbox.Event{Kind: outbox.EventStoreError, Store: "dynamodb-stream", Time: time.Now(), Err: err})
			return sequence[0]
		}
	}
	entries := make([]outbox.Entry, len(items))
	preset := make([]outbox.Outcome, len(items))
	for i, it := range items {
		entries[i] = it.entry
		switch {
		case it.damage != nil:
			preset[i] = outbox.Outcome{Refused: it.damage}
		case parked[it.groupKey()]:
			preset[i] = outbox.Outcome{Held: fmt.Errorf("outbox: message group %q is parked: the container relay sends the entry once it goes on", it.entry.GroupID)}
		}
	}
	outcomes := outbox.Publish(ctx, h.producer, entries, preset)
	var published []string
	for i, o := range outcomes {
		if o.Published() {
			published = append(published, entries[i].ID)
		}
	}
	removeErr := h.outbox.remove(ctx, h.api, published)
	first := -1 // the first record to retry
	for i, o := range outcomes {
		entry := &entries[i]
		ev := outbox.Event{Store: "dynamodb-stream", Time: time.Now(), Entry: entry}
		switch {
		case o.Published() && removeErr == nil:
			ev.Kind, ev.MessageID = outbox.EventPublished, o.MessageID
		case o.Published():
			ev.Kind, ev.Err = outbox.EventRetry, fmt.Errorf("outbox: sent as %s but not deleted: %w", o.MessageID, removeErr)
		case o.Refused != nil:
			attempts := entry.Attempts + 1
			if err := h.outbox.markFailed(ctx, h.api, items[i], "", attempts, o.Refused); err != nil {
				ev.Kind, ev.Err = outbox.EventRetry, err
			} else {
				ev.Kind, ev.Err = outbox.EventFailed, o.Refused
				entry.Attempts, entry.FailedAt, entry.FailureReason = attempts, ev.Time, o.Refused.Error()
			}
		case o.Held != nil:
			ev.Kind, ev.Err = outbox.EventRetry, o.Held // stays unpublished; not a failure of the record
		default:
			ev.Kind, ev.Err = outbox.EventRetry, o.Retry
		}
		if ev.Kind == outbox.EventRetry && o.Held == nil && first < 0 {
			first = i
		}
		h.observer.ObserveOutbox(ctx, ev)
	}
	if first < 0 {
		return ""
	}
	return sequence[first]
}

// imageGetter reads the attributes of a stream image.
func imageGetter(image map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		value, has := image[name]
		return value, has
	}
}
