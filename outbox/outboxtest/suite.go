// Package outboxtest holds the conformance suite every [outbox.Store] must pass: the
// guarantees a relay relies on, checked end to end through a real [outbox.Relay], a
// [producer.Producer] and SQS. The DynamoDB and PostgreSQL stores run it, and so does a
// store kept in memory in this package's own tests; run it against your own store the
// same way:
//
//	func TestMyStore(t *testing.T) {
//		outboxtest.Run(t, func(t *testing.T) outboxtest.Harness {
//			return newMyHarness(t) // a fresh, empty outbox
//		})
//	}
//
// The suite talks to SQS through the standard AWS configuration (AWS_ENDPOINT_URL_SQS,
// AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION and credentials: the local emulators that
// localstack/up starts and localstack/env describes); it creates a queue per case and
// deletes it at the end. It fails, never skips, when they are not set. A case that
// relies on AWS behaviour an emulator lacks skips on that emulator only.
//
// What it checks, each as a parallel subtest (see [Run] for the list): a transaction
// that rolls back leaves no entry; entries are published once each and removed; a
// relay that dies after its claim, or after its send, loses nothing (the repeat carries
// the same deduplication id and idempotency key); an entry SQS refuses, or one that
// cannot be decoded, is marked failed apart and the relay goes on; a send that keeps
// failing is retried with its backoff, then failed; due order and FIFO message group
// order (also with several SendMessageBatch calls of a cycle in flight: a group never in
// two at once), a group taken only from its earliest unpublished entry and by one relay at a
// time; a failed group entry parks its group until it is retried or skipped; the
// counts, listings and actions of the store's [outbox.Operator].
package outboxtest

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// Harness is one outbox store as the suite drives it: the store itself ([Harness.Store]),
// its operator ([Harness.Operator]) and the writes that are not part of either (each
// store has its own transaction type). Every method fails t on an
// unexpected error. A harness is used by one subtest; its methods may be called from
// that subtest's goroutine only.
type Harness interface {
	// Commit writes jobs, bound for queueURL, as outbox entries in one transaction
	// together with a business record of the harness's choice, commits it and returns
	// the entries (from the store's write path, say [outbox.NewEntry]).
	Commit(t *testing.T, queueURL string, jobs ...producer.Job) []outbox.Entry
	// Rollback writes jobs for queueURL with a business record in a transaction that
	// does not commit (rolled back, or cancelled by the database).
	Rollback(t *testing.T, queueURL string, jobs ...producer.Job)
	// Store returns a new store over the harness's outbox, as a relay process of its
	// own would open it: the suite gives each relay its own, and calls Close on those
	// it uses without a relay. lease is how long a claim lasts, for a store that leases
	// its claims (a store whose claims end with their connection ignores it); the suite
	// passes a few seconds where it waits for a lease to end.
	Store(t *testing.T, lease time.Duration) outbox.Store
	// Crash ends s as the death of its process would: its claims are neither settled
	// nor released, and end the way the store ends a dead relay's claims (its
	// connections closed by the server; a leased claim simply runs out).
	Crash(t *testing.T, s outbox.Store)
	// Pending returns the ids of the unpublished entries that are not failed, in
	// publish order.
	Pending(t *testing.T) []string
	// Operator returns the outbox's [outbox.Operator]: the suite checks its counts,
	// listings, Retry and Skip against what the relays did.
	Operator() outbox.Operator
	// PlantDamaged writes, outside any Commit, an unpublished entry for queueURL whose
	// stored job cannot be decoded (say the stored text cut short), ahead of the entries
	// committed after it in publish order, and returns its id.
	PlantDamaged(t *testing.T, queueURL string) string
}

// Run runs the conformance suite against the store newHarness makes, each case as a
// parallel subtest with a harness of its own (newHarness is called once per subtest,
// and must return an empty outbox). A case takes a few seconds to a minute on the
// local emulators.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newHarness(t))
		})
	}
}

type suiteCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

var cases = []suiteCase{
	{"RollbackProducesNothing", testRollbackProducesNothing},
	{"CrashAfterClaimLosesNothing", testCrashAfterClaimLosesNothing},
	{"CrashAfterSendIsAbsorbedByIdempotency", testCrashAfterSendIsAbsorbedByIdempotency},
	{"RefusedEntriesAreFailedAndTheRelayGoesOn", testRefusedEntriesAreFailed},
	{"DamagedEntryIsFailedApart", testDamagedEntryIsFailedApart},
	{"BrokenDestinationIsRetriedThenFailed", testBrokenDestinationIsRetriedThenFailed},
	{"RetriedEntryIsSentAgain", testRetriedEntryIsSentAgain},
	{"BacklogAndLagAreReported", testBacklogAndLag},
	{"DueOrder", testDueOrder},
	{"FIFOGroupOrderKept", testFIFOGroupOrderKept},
	{"FIFOGroupOrderKeptWithCallsInFlight", testFIFOGroupOrderWithCallsInFlight},
	{"UniqueKeysAndDeduplicationIDs", testUniqueKeysAndDeduplicationIDs},
	{"HeldGroupHeadStopsOnlyItsGroup", testHeldGroupHeadStopsOnlyItsGroup},
	{"CrashMidGroupResendsWithTheSameDeduplicationID", testCrashMidGroup},
	{"RefusedGroupEntryParksItsGroupUntilSkipped", testRefusedGroupEntryParksItsGroup},
}

// lease is the claim lease of the suite's relays; crashLease that of a store the suite
// crashes, whose claims the next relay waits for.
const (
	lease      = time.Minute
	crashLease = 2 * time.Second
)
