package outboxdynamo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// NewRelay returns a container relay for the DynamoDB outbox o. Each cycle it
// queries the outbox's sparse index of unpublished entries (a Query per shard, in
// creation order, of the entries due now; never a Scan), claims them one by one with a
// conditional UpdateItem (a lease of ClaimLease), publishes them, and deletes them with
// BatchWriteItem once SQS confirmed them; a failed send is recorded on the entry
// (attempts, next attempt time, last error), and an entry that can never be sent or ran
// out of attempts moves to the index's "failed" partition ("parked" for an entry of a
// FIFO message group, which then waits: see [outbox.ParkedGroup]).
//
// Why an index rather than the stream: the relay's position is then the table itself.
// A restarted or second relay needs no checkpoint, shard leases or iterator (a stream
// reader needs all three, and loses its position with the 24-hour retention); a
// message group's entries are read in their order (a stream orders records per item
// only); and a table need not have a stream. The price is a Query per shard and cycle
// (idle relays poll at PollInterval) and a conditional write per entry for its claim.
// Relays may run at once: a claim is taken by one relay only, a FIFO group is taken
// only from its earliest unpublished entry, and never while that entry is claimed by
// another relay, waits for its next attempt or is failed. A relay that dies keeps its
// entries for the claim's lease; the next relay sends them again with the same
// deduplication id and idempotency key. The index is eventually consistent on AWS: the
// claim's condition rechecks each entry on the table itself.
//
// The order of a FIFO message group is the order of its entries' creation times (the
// writer's clock, then the order of writes in one process): keep one writer per group,
// or writers whose clocks agree, where that order matters.
func NewRelay(api API, o *Outbox, p *producer.Producer, config outbox.RelayConfig) (*outbox.Relay, error) {
	if api == nil || o == nil {
		return nil, errors.New("outbox: NewRelay needs a DynamoDB client and an outbox")
	}
	return outbox.NewRelay(NewStore(api, o, cmp.Or(config.ClaimLease, outbox.DefaultClaimLease)), p, config)
}

// NewStore returns the [outbox.Store] of the DynamoDB outbox o, for [NewRelay]: the
// claims [NewRelay] describes, each held for lease (if zero or negative,
// outbox.DefaultClaimLease). Most users call NewRelay, which sets lease from
// outbox.RelayConfig.ClaimLease.
func NewStore(api API, o *Outbox, lease time.Duration) outbox.Store {
	if lease <= 0 {
		lease = outbox.DefaultClaimLease
	}
	return &dynamoStore{api: api, outbox: o, lease: lease}
}

// clockAllowance is how far past its own clock a relay reads the index: entries of a
// writer whose clock is ahead are still read at once (and entries waiting for a retry
// due within it are read, and skipped, by the claim's check).
const clockAllowance = time.Minute

type dynamoStore struct {
	api    API
	outbox *Outbox
	lease  time.Duration
	next   int // the shard the next claim starts at
}

func (s *dynamoStore) Name() string { return "dynamodb" }

func (s *dynamoStore) Claim(ctx context.Context, limit int, minAge time.Duration) (outbox.Claim, error) {
	now := time.Now()
	parked, err := s.outbox.parkedGroups(ctx, s.api)
	if err != nil {
		return nil, err
	}
	before := seqKey(now.Add(clockAllowance), "")
	if minAge > 0 {
		before = seqKey(now.Add(-minAge), "")
	}
	c := &dynamoClaim{store: s, token: newToken(), items: map[string]dynamoItem{}}
	blocked := parked // FIFO groups this cycle must not take from: parked, or an earlier entry not taken
	var claimErr error
	shards := s.outbox.shards
	for k := range shards {
		if len(c.list) >= limit {
			break
		}
		shard := pendingPrefix + strconv.Itoa((s.next+k)%shards)
		err = s.outbox.scan(ctx, s.api, shard, before, func(it dynamoItem) bool {
			group := it.groupKey()
			if group != "" && blocked[group] {
				return true
			}
			taken := false
			if it.claimEnd.Before(now) && !it.entry.NextAttemptAt.After(now) {
				var stored dynamoItem
				stored, taken, claimErr = s.outbox.claimItem(ctx, s.api, it, c.token, now, now.Add(s.lease))
				if claimErr != nil {
					return false
				}
				if taken {
					c.add(stored)
					taken = stored.damage == nil // a damaged entry is failed: it parks its group
				}
			}
			if !taken && group != "" {
				blocked[group] = true
			}
			return len(c.list) < limit
		})
		if err = errors.Join(err, claimErr); err != nil {
			break
		}
	}
	s.next = (s.next + 1) % shards
	return c, err
}

func (s *dynamoStore) Summary(ctx context.Context) (outbox.Summary, error) {
	return s.outbox.Summary(ctx, s.api)
}

func (s *dynamoStore) Wait(ctx context.Context, d time.Duration) { _ = sleep(ctx, d) }

func (s *dynamoStore) Close() {}

// newToken returns a random claim token.
func newToken() string {
	random := make([]byte, 12)
	_, _ = rand.Read(random) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(random)
}

type dynamoClaim struct {
	store *dynamoStore
	token string
	list  []outbox.Claimed
	items map[string]dynamoItem
}

func (c *dynamoClaim) add(it dynamoItem) {
	c.list = append(c.list, outbox.Claimed{Entry: it.entry, Damage: it.damage})
	c.items[it.entry.ID] = it
}

func (c *dynamoClaim) Entries() []outbox.Claimed { return c.list }

func (c *dynamoClaim) Settle(ctx context.Context, verdicts []outbox.Verdict) error {
	s := c.store
	var published []string
	var errs []error
	for _, v := range verdicts {
		it := c.items[v.ID]
		var err error
		switch v.Kind {
		case outbox.VerdictPublished:
			published = append(published, v.ID)
		case outbox.VerdictRetry:
			err = s.outbox.recordRetry(ctx, s.api, it, c.token, v.Attempts, v.Next, v.Err)
		case outbox.VerdictFailed:
			err = s.outbox.markFailed(ctx, s.api, it, c.token, v.Attempts, v.Err)
		case outbox.VerdictHeld:
			err = s.outbox.releaseItem(ctx, s.api, v.ID, c.token)
		}
		errs = append(errs, err)
	}
	if err := s.outbox.remove(ctx, s.api, published); err != nil {
		errs = append(errs, fmt.Errorf("%w (they were sent; they are sent again after the claim's lease)", err))
	}
	return errors.Join(errs...)
}

// release ends the claim on every entry (a claim with no entries has nothing to end).
func (c *dynamoClaim) Release(ctx context.Context) {
	for _, e := range c.list {
		_ = c.store.outbox.releaseItem(ctx, c.store.api, e.ID, c.token)
	}
}
