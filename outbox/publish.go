package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/producer"
)

// Outcome is what became of one entry handed to [Publish]. At most one of Refused, Retry
// and Held is set; none when the entry was published.
type Outcome struct {
	// MessageID is the SQS message id of a published entry (for a unique job whose key
	// another send holds, the holder's).
	MessageID string
	// Refused is set when the entry can never be sent (it wraps [ErrRefused], or
	// [ErrDamaged] for a preset damaged entry): mark it failed.
	Refused error
	// Retry is set when a send of the entry failed on the network's, SQS's or the
	// queue's side: count the attempt, try again later.
	Retry error
	// Held is set when the entry was not sent because an earlier entry of its FIFO
	// group was not: no attempt is counted; it goes out after that entry.
	Held error
}

// Published reports whether the entry was published (SQS confirmed it).
func (o Outcome) Published() bool { return o.Refused == nil && o.Retry == nil && o.Held == nil }

// Publish sends entries (in the store's order) through p and returns one outcome per
// entry, with up to [DefaultInFlight] SendMessageBatch calls in flight: see
// [PublishInFlight].
func Publish(ctx context.Context, p *producer.Producer, entries []Entry, outcomes []Outcome) []Outcome {
	return PublishInFlight(ctx, p, DefaultInFlight, entries, outcomes)
}

// PublishInFlight sends entries (in the store's order) through p and returns one
// outcome per entry: what a relay cycle does between its claim and its settlement, and
// what a stream relay (outboxdynamo.StreamRelay) does with a stream batch. outcomes, if
// not nil, holds preset outcomes, one per entry (an entry refused before the send, say
// a damaged one; one held because its group is parked): those entries are not sent,
// and count as not sent for their groups; it is filled in and returned.
//
// Entries go to their queues in SendMessageBatch calls of up to 10, up to inFlight
// calls at once (less than 1 counts as 1). For FIFO queues a call carries at most one
// entry of a message group, and a call that carries a group's entry starts only after
// the call with the group's previous entry returned, so a group never has two calls in
// flight; once an entry of a group is not sent (failed, refused or held), the group's
// later entries are held, so a group is published in order even when single entries of
// a call fail. Entries with one unique key (producer.Job.UniqueKey) are sent one call
// after the other in the same way, so the repeat finds the first send's key confirmed.
// A call of which every entry failed on SQS's, the network's or the queue's side (a
// queue that does not exist, denied access) ends the queue's sends: the entries of its
// calls not yet started fail with the same error, an attempt each, without more calls.
// It returns when every call returned.
func PublishInFlight(ctx context.Context, p *producer.Producer, inFlight int, entries []Entry, outcomes []Outcome) []Outcome {
	if outcomes == nil {
		outcomes = make([]Outcome, len(entries))
	}
	calls := planCalls(entries, outcomes)
	send := func(queue string, call []int) { sendCall(ctx, p, queue, entries, call, outcomes) }
	runCalls(send, entries, outcomes, calls, inFlight)
	return outcomes
}

// notSent returns why o's entry holds its group back, or nil when it was published.
func (o Outcome) notSent() error {
	switch {
	case o.Refused != nil:
		return o.Refused
	case o.Retry != nil:
		return o.Retry
	}
	return o.Held
}

// sendCall sends the entries at call (at most 10) with one SendBatch. When the whole
// request is refused (SQS rejects a request with an invalid entry as a whole), each
// entry is sent alone so that only the bad one fails.
func sendCall(ctx context.Context, p *producer.Producer, queue string, entries []Entry, call []int, outcomes []Outcome) {
	jobs := make([]producer.Prepared, len(call))
	for j, i := range call {
		jobs[j] = entries[i].Job
	}
	results, _ := p.SendPreparedBatch(ctx, jobs)
	for j, i := range call {
		result := results[j]
		switch {
		case result.Err == nil:
			outcomes[i] = Outcome{MessageID: result.MessageID}
		case len(call) > 1 && isCallError(result.Err) && refused(result.Err):
			one, _ := p.SendPreparedBatch(ctx, jobs[j:j+1])
			outcomes[i] = classify(one[0])
		default:
			outcomes[i] = classify(result)
		}
	}
}

// classify turns the result of one entry's send into its outcome. A unique job whose
// key another send holds (a repeat of this entry's own send after a relay died before
// its mark, or a duplicate job) is published: the holder's message id stands for it,
// and nothing is sent; while the holder's send is unconfirmed it is retried. A unique
// job sent whose key was not confirmed is published (it must not be sent again).
func classify(result producer.Result) Outcome {
	duplicate, isDuplicate := errors.AsType[*producer.DuplicateJobError](result.Err)
	switch {
	case result.Err == nil:
		return Outcome{MessageID: result.MessageID}
	case isDuplicate && !duplicate.Pending:
		return Outcome{MessageID: duplicate.MessageID}
	case isDuplicate:
		return Outcome{Retry: result.Err}
	case errors.Is(result.Err, producer.ErrUniqueNotConfirmed) && result.MessageID != "":
		return Outcome{MessageID: result.MessageID}
	case refused(result.Err):
		return Outcome{Refused: refusal(result.Err)}
	}
	return Outcome{Retry: result.Err}
}

// refusal wraps err, which refused says the entry itself caused, in [ErrRefused].
func refusal(err error) error {
	if errors.Is(err, producer.ErrTooLarge) {
		return fmt.Errorf("%w: message too large: %w", ErrRefused, err)
	}
	return fmt.Errorf("%w: %w", ErrRefused, err)
}

// refusedCodes are SQS error codes that blame the message itself.
var refusedCodes = map[string]bool{
	"InvalidParameterValue":                      true,
	"InvalidParameterValueException":             true,
	"InvalidMessageContents":                     true,
	"InvalidAttributeName":                       true,
	"InvalidAttributeValue":                      true,
	"MissingParameter":                           true,
	"AWS.SimpleQueueService.BatchRequestTooLong": true,
	"BatchRequestTooLong":                        true,
}

// refused reports whether err says the entry itself can never be sent: too large (no
// claim check), a sender fault of its batch entry, an SQS error code that blames the
// message, or the producer's own check of the job (which makes no SQS call). Errors of
// the network, of SQS's side, of access or of a missing queue are not refusals: the
// entry is retried.
func refused(err error) bool {
	if errors.Is(err, producer.ErrTooLarge) {
		return true
	}
	if entry, ok := errors.AsType[*sqsx.EntryError](err); ok {
		return entry.SenderFault
	}
	if api, ok := errors.AsType[smithy.APIError](err); ok {
		return refusedCodes[api.ErrorCode()]
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := errors.AsType[*smithy.OperationError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*sqsx.CallError](err); ok {
		return false
	}
	return true
}

func isCallError(err error) bool {
	_, ok := errors.AsType[*sqsx.CallError](err)
	return ok
}
