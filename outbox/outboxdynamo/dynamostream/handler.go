// Package dynamostream is the Lambda relay of a DynamoDB outbox: the handler of the
// outbox table's stream. It is a package of its own so that only a Lambda function on
// the stream links aws-lambda-go; the relay logic is [outboxdynamo.StreamRelay].
package dynamostream

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/producer"
)

// Handler is the Lambda handler of a DynamoDB outbox table's stream: an event source
// mapping with FunctionResponseTypes ["ReportBatchItemFailures"] and the stream view
// NEW_IMAGE or NEW_AND_OLD_IMAGES ([outboxdynamo.Outbox.CreateTableInput] enables
// NEW_IMAGE). It publishes the batch's new entries through an
// [outboxdynamo.StreamRelay] and reports the first record it did not finish in
// batchItemFailures, by its sequence number; Lambda then retries the batch from it (AWS
// Lambda Developer Guide, "Configuring partial batch response with DynamoDB and
// Lambda").
//
// The stream is the fast path: run a container relay ([outboxdynamo.NewRelay], with
// MinAge) beside it for what the stream misses (see [outboxdynamo.StreamRelay]).
// Configure the mapping with StartingPosition TRIM_HORIZON, BisectBatchOnFunctionError,
// a finite MaximumRetryAttempts and an on-failure destination.
type Handler struct {
	relay *outboxdynamo.StreamRelay
}

// New returns the stream handler of o. observer may be nil. It returns
// [outboxdynamo.NewStreamRelay]'s error for a nil client, outbox or producer.
func New(api outboxdynamo.API, o *outboxdynamo.Outbox, p *producer.Producer, observer outbox.Observer) (*Handler, error) {
	relay, err := outboxdynamo.NewStreamRelay(api, o, p, observer)
	if err != nil {
		return nil, err
	}
	return &Handler{relay: relay}, nil
}

// Handle publishes the new entries of event and returns the record to retry (at most
// one: Lambda checkpoints at the lowest reported sequence number, so reporting more
// records changes nothing). It never returns an error: every record is answered in the
// response.
func (h *Handler) Handle(ctx context.Context, event events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	records := make([]outboxdynamo.StreamRecord, len(event.Records))
	for i, r := range event.Records {
		records[i] = outboxdynamo.StreamRecord{EventName: r.EventName, SequenceNumber: r.Change.SequenceNumber, NewImage: image(r.Change.NewImage)}
	}
	retryFrom := h.relay.Publish(ctx, records)
	if retryFrom == "" {
		return events.DynamoDBEventResponse{}, nil
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: retryFrom}}}, nil
}

// image returns the string and number attributes of a stream image, as text.
func image(attributes map[string]events.DynamoDBAttributeValue) map[string]string {
	out := make(map[string]string, len(attributes))
	for name, value := range attributes {
		switch value.DataType() {
		case events.DataTypeString:
			out[name] = value.String()
		case events.DataTypeNumber:
			out[name] = value.Number()
		}
	}
	return out
}
