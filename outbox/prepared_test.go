package outbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// The options the outbox used to refuse go through it as the producer sends them: on a
// FIFO queue a UniqueKey (and a DeduplicationID) is the deduplication id, so of two
// entries with one key SQS delivers the first; both entries are published.
func TestOutboxCarriesUniqueKeysAndDeduplicationIDs(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, h harness) {
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
		entries := h.commit(t, queue.URL,
			producer.Job{Type: "order", Body: "first", GroupID: "g", UniqueKey: "order-7"},
			producer.Job{Type: "order", Body: "again", GroupID: "g", UniqueKey: "order-7"},
			producer.Job{Type: "order", Body: "own", GroupID: "g", DeduplicationID: "own-1"},
		)
		assert.Equal(t, "order-7", entries[0].Job.DeduplicationID)
		assert.Equal(t, "own-1", entries[2].Job.DeduplicationID)
		r := h.relay(t, newTestProducer(t, client), RelayConfig{PollInterval: 50 * time.Millisecond})
		startRelay(t, r)
		testenv.Eventually(t, 20*time.Second, "all three entries published", func() bool { return r.Stats().Published == 3 })
		got := drainQueue(t, client, queue.URL, 2, 20*time.Second)
		assert.Equal(t, []string{entries[0].ID, entries[2].ID}, []string{outboxID(got[0]), outboxID(got[1])}, "the repeat of the key is not delivered")
		queueEmpty(t, client, queue.URL)
	})
}
