package outbox

import "context"

// Operator is what an operator does with one outbox, bound to its client: count it, list
// its failed entries and parked FIFO groups, and release a failed entry. The CLI's
// `sqsworker outbox` commands and the operations page work through it, so any store
// that provides one backs them (outboxdynamo.Outbox.Operator, outboxpg.Outbox.Operator);
// the conformance suite (outboxtest) checks a store's Operator with its relay. Its
// methods must be safe for concurrent use.
type Operator interface {
	// Summary counts the unpublished entries, the age of the oldest, the failed entries
	// and the parked FIFO message groups.
	Summary(ctx context.Context) (Summary, error)
	// Failed returns up to limit failed entries with their reasons.
	Failed(ctx context.Context, limit int) ([]Entry, error)
	// Parked returns up to limit parked FIFO message groups, each with the failed entry
	// that holds it back.
	Parked(ctx context.Context, limit int) ([]ParkedGroup, error)
	// Retry makes the failed entry id unpublished again, due at once, with no attempts
	// counted (a parked group goes on from it); Skip deletes it (it is never sent, and a
	// group it parked goes on with its next entry). Both return an error wrapping
	// [ErrNotFailed] when no failed entry has that id.
	Retry(ctx context.Context, id string) error
	Skip(ctx context.Context, id string) error
}
