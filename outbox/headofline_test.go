package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// fastRetries retries after 200 ms, 3 attempts in all.
var fastRetries = RelayConfig{
	PollInterval: 50 * time.Millisecond, MaxAttempts: 3,
	Backoff: sqsworker.Backoff{Base: 200 * time.Millisecond, Cap: 200 * time.Millisecond, Jitter: sqsworker.JitterNone},
}

// 100 entries for a queue that does not exist, committed before 5 entries for a good
// queue: the good ones go out at once (before, each cycle claimed the same first 100 and
// retried them without end, and the 5 were not sent in 30 s); the broken ones are tried
// 3 times, 200 ms apart, then marked failed with their last error.
func TestBrokenDestinationDoesNotHoldBackTheRest(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		missing := queue.URL + "-missing"
		broken := make([]producer.Job, 100)
		for i := range broken {
			broken[i] = webhookJob(i)
		}
		h.commit(t, missing, broken[:50]...) // a DynamoDB transaction takes at most 100 items
		h.commit(t, missing, broken[50:]...)
		good := h.commit(t, queue.URL, webhookJob(1001), webhookJob(1002), webhookJob(1003), webhookJob(1004), webhookJob(1005))
		events := &recorder{}
		config := fastRetries
		config.Observer = events
		r := h.relay(t, newTestProducer(t, client), config)
		// The first cycle claims and fails the 100 broken entries (on DynamoDB some 200
		// conditional writes, on an emulator that serves one request at a time); the
		// second sends the 5.
		wait := 30*time.Second + 300*slowestRoundTrip(t)
		started := time.Now()
		startRelay(t, r)
		got := drainQueue(t, client, queue.URL, 5, wait)
		twoCycles := time.Since(started) // the broken entries' first attempt, then the 5
		require.ElementsMatch(t, ids(good), []string{outboxID(got[0]), outboxID(got[1]), outboxID(got[2]), outboxID(got[3]), outboxID(got[4])})

		// Two more attempts of the 100, each a cycle as costly as the first, as measured.
		testenv.Eventually(t, 30*time.Second+3*twoCycles, "100 entries failed", func() bool { return r.Stats().Failed == 100 })
		failed := h.failed(t)
		require.Len(t, failed, 100)
		for _, e := range failed {
			assert.Equal(t, missing, e.QueueURL)
			assert.Equal(t, 3, e.Attempts)
			assert.True(t, strings.HasPrefix(e.FailureReason, "outbox: entry not sent after its last attempt (attempt 3 of 3): "), e.FailureReason)
			assert.Regexp(t, `NonExistentQueue|QueueDoesNotExist`, e.FailureReason)
		}
		retries := map[string][]int{}
		for _, ev := range events.kinds(EventRetry) {
			retries[ev.Entry.ID] = append(retries[ev.Entry.ID], ev.Entry.Attempts)
			assert.False(t, ev.Entry.NextAttemptAt.IsZero())
		}
		require.Len(t, retries, 100)
		for id, attempts := range retries {
			assert.Equal(t, []int{1, 2}, attempts, id)
		}
		assert.Equal(t, RelayStats{Published: 5, Failed: 100, Retried: 200}, withoutCycles(r.Stats()))
		assert.Empty(t, h.pending(t))
		s := h.summary(t)
		assert.Equal(t, Summary{Failed: 100}, s)
	})
}

// slowestRoundTrip measures three DynamoDB round trips (moto serves one request at a
// time, and on a busy machine one call can take long) and returns the slowest.
func slowestRoundTrip(t *testing.T) time.Duration {
	t.Helper()
	db := testenv.DynamoDB(t)
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		_, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		require.NoError(t, err)
		slowest = max(slowest, time.Since(begin))
	}
	return slowest
}

func withoutCycles(s RelayStats) RelayStats {
	s.Cycles, s.StoreErrors = 0, 0
	return s
}

// A damaged entry (its attributes cannot be decoded) ahead of good ones: it is marked
// failed with the reason and the relay goes on with the rest (before, every cycle failed
// on it and nothing was sent).
func TestDamagedEntryDoesNotStopTheRelay(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		damaged := h.plantDamaged(t, queue.URL)
		good := h.commit(t, queue.URL, webhookJob(1), webhookJob(2))
		events := &recorder{}
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond, Observer: events})
		startRelay(t, r)
		got := drainQueue(t, client, queue.URL, 2, 20*time.Second)
		require.ElementsMatch(t, ids(good), []string{outboxID(got[0]), outboxID(got[1])})
		testenv.Eventually(t, 10*time.Second, "the damaged entry failed", func() bool { return r.Stats().Failed == 1 })
		failed := h.failed(t)
		require.Len(t, failed, 1)
		assert.Equal(t, damaged, failed[0].ID)
		assert.True(t, strings.HasPrefix(failed[0].FailureReason, "outbox: entry cannot be decoded: "), failed[0].FailureReason)
		assert.Contains(t, failed[0].FailureReason, "not a valid prepared job")
		require.Len(t, events.kinds(EventFailed), 1)
		assert.True(t, errors.Is(events.kinds(EventFailed)[0].Err, ErrDamaged))
		assert.Zero(t, r.Stats().StoreErrors)
		queueEmpty(t, client, queue.URL)
	})
}
