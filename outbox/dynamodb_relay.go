package outbox

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/producer"
)

// NewDynamoDBRelay returns a container relay for the DynamoDB outbox o. Each cycle it
// queries the outbox's sparse index of unpublished entries (a Query per shard, in
// creation order; never a Scan), publishes them and deletes them with BatchWriteItem
// once SQS confirmed them; refused entries move to the index's "failed" partition.
//
// Why an index rather than the stream: the relay's position is then the table itself.
// A restarted or second relay needs no checkpoint, shard leases or iterator (a stream
// reader needs all three, and loses its position with the 24-hour retention); a
// message group's entries are read in their order (a stream orders records per item
// only); and a table need not have a stream. The price is a Query per shard and cycle
// (idle relays poll at PollInterval) and that relays running at once may each send an
// entry: run one relay per table, or accept duplicates, which the FIFO deduplication id
// and the consumer's idempotency absorb. The index is eventually consistent on AWS: an
// entry just deleted may be read once more; the relay skips ids it published in the
// last minute.
func NewDynamoDBRelay(api DynamoDBAPI, o *DynamoDB, p *producer.Producer, config RelayConfig) (*Relay, error) {
	if api == nil || o == nil {
		return nil, errors.New("outbox: NewDynamoDBRelay needs a DynamoDB client and an outbox")
	}
	return newRelay(&dynamoStore{api: api, outbox: o, recent: map[string]time.Time{}}, p, config)
}

// recentWindow is how long a relay remembers the ids it published.
const recentWindow = time.Minute

type dynamoStore struct {
	api    DynamoDBAPI
	outbox *DynamoDB
	next   int // the shard the next claim starts at

	mu     sync.Mutex
	recent map[string]time.Time // published id → when
}

func (s *dynamoStore) name() string { return "dynamodb" }

func (s *dynamoStore) claim(ctx context.Context, limit int) (claim, error) {
	var entries []Entry
	shards := s.outbox.shards
	for k := range shards {
		if len(entries) >= limit {
			break
		}
		shard := (s.next + k) % shards
		found, err := s.outbox.query(ctx, s.api, pendingPrefix+strconv.Itoa(shard), limit-len(entries))
		if err != nil {
			return nil, err
		}
		entries = append(entries, s.fresh(found)...)
	}
	s.next = (s.next + 1) % shards
	return &dynamoClaim{store: s, list: entries}, nil
}

// fresh drops the entries this relay published within recentWindow.
func (s *dynamoStore) fresh(entries []Entry) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for id, at := range s.recent {
		if now.Sub(at) > recentWindow {
			delete(s.recent, id)
		}
	}
	kept := entries[:0]
	for _, e := range entries {
		if _, seen := s.recent[e.ID]; !seen {
			kept = append(kept, e)
		}
	}
	return kept
}

// backlog counts the unpublished entries; the lag is measured from the entry's
// creation time on the writer's clock.
func (s *dynamoStore) backlog(ctx context.Context) (int, time.Duration, error) {
	return s.outbox.Backlog(ctx, s.api)
}

func (s *dynamoStore) wait(ctx context.Context, d time.Duration) { _ = sleep(ctx, d) }

func (s *dynamoStore) close() {}

type dynamoClaim struct {
	store *dynamoStore
	list  []Entry
}

func (c *dynamoClaim) entries() []Entry { return c.list }

func (c *dynamoClaim) settle(ctx context.Context, published []string, refused map[string]error) error {
	s := c.store
	s.mu.Lock()
	now := time.Now()
	for _, id := range published {
		s.recent[id] = now
	}
	s.mu.Unlock()
	errs := []error{s.outbox.remove(ctx, s.api, published)}
	for id, reason := range refused {
		errs = append(errs, s.outbox.markFailed(ctx, s.api, id, reason))
	}
	return errors.Join(errs...)
}

func (c *dynamoClaim) release(context.Context) {}
