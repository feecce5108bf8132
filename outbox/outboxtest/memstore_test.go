package outboxtest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
	"github.com/sqsworker/sqsworker/producer"
)

// A store outside the outbox package, in memory, written against the exported seam
// only: it passes the same suite as the DynamoDB and PostgreSQL stores, through a real
// relay and SQS.
func TestMemoryStorePassesTheSuite(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outboxtest.Harness { return newMemOutbox() })
}

// memOutbox is the outbox's "table": entries in write order, each with its stored job.
// A claim belongs to the store (the "connection") that took it; Crash ends them all.
type memOutbox struct {
	mu      sync.Mutex
	rows    []*memRow // in publish order
	first   int64     // the seq of a planted entry, before every other
	seq     int64
	claims  int
	written chan struct{} // closed and replaced at each commit: wakes waiting stores
}

type memRow struct {
	seq    int64
	entry  outbox.Entry // without its job, read from stored at each claim
	stored string
	failed bool
	claim  int // the claim holding the row; 0 none
	owner  *memStore
}

func newMemOutbox() *memOutbox { return &memOutbox{written: make(chan struct{})} }

func groupOf(e outbox.Entry) string {
	if !e.Ordered() {
		return ""
	}
	return e.QueueURL + "\x00" + e.GroupID
}

func (o *memOutbox) write(t *testing.T, queueURL string, jobs []producer.Job, commit bool) []outbox.Entry {
	t.Helper()
	rows := make([]*memRow, len(jobs))
	entries := make([]outbox.Entry, len(jobs))
	for i, job := range jobs {
		e, err := outbox.NewEntry(queueURL, job, time.Now())
		require.NoError(t, err)
		stored, err := e.EncodeJob()
		require.NoError(t, err)
		entries[i] = e
		e.Job = producer.Prepared{}
		rows[i] = &memRow{entry: e, stored: stored}
	}
	if !commit {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		o.seq++
		r.seq = o.seq
		o.rows = append(o.rows, r)
	}
	close(o.written)
	o.written = make(chan struct{})
	return entries
}

func (o *memOutbox) Commit(t *testing.T, queueURL string, jobs ...producer.Job) []outbox.Entry {
	return o.write(t, queueURL, jobs, true)
}

func (o *memOutbox) Rollback(t *testing.T, queueURL string, jobs ...producer.Job) {
	o.write(t, queueURL, jobs, false)
}

func (o *memOutbox) Store(*testing.T, time.Duration) outbox.Store { return &memStore{outbox: o} }

func (o *memOutbox) Crash(_ *testing.T, s outbox.Store) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.rows {
		if r.owner == s {
			r.claim, r.owner = 0, nil
		}
	}
}

func (o *memOutbox) Pending(*testing.T) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for _, r := range o.rows {
		if !r.failed {
			ids = append(ids, r.entry.ID)
		}
	}
	return ids
}

func (o *memOutbox) Operator() outbox.Operator { return o }

func (o *memOutbox) Failed(_ context.Context, limit int) ([]outbox.Entry, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var failed []outbox.Entry
	for _, r := range o.rows {
		if r.failed && len(failed) < limit {
			failed = append(failed, r.entry)
		}
	}
	return failed, nil
}

func (o *memOutbox) Parked(_ context.Context, limit int) ([]outbox.ParkedGroup, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var groups []outbox.ParkedGroup
	at := map[string]int{}
	for _, r := range o.rows {
		group := groupOf(r.entry)
		i, parked := at[group]
		switch {
		case group == "":
		case parked:
			groups[i].Waiting++
		case r.failed && len(groups) < limit:
			at[group] = len(groups)
			groups = append(groups, outbox.ParkedGroup{QueueURL: r.entry.QueueURL, GroupID: r.entry.GroupID, Entry: r.entry})
		}
	}
	return groups, nil
}

func (o *memOutbox) Summary(context.Context) (outbox.Summary, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.summary(), nil
}

func (o *memOutbox) summary() outbox.Summary {
	var s outbox.Summary
	parked := map[string]bool{}
	var oldest time.Time
	for _, r := range o.rows {
		switch {
		case r.failed:
			s.Failed++
			if group := groupOf(r.entry); group != "" {
				parked[group] = true
			}
		default:
			s.Unpublished++
			if oldest.IsZero() || r.entry.CreatedAt.Before(oldest) {
				oldest = r.entry.CreatedAt
			}
		}
	}
	if !oldest.IsZero() {
		s.OldestUnpublished = max(time.Since(oldest), 0)
	}
	s.ParkedGroups = len(parked)
	return s
}

func (o *memOutbox) find(id string) int {
	return slices.IndexFunc(o.rows, func(r *memRow) bool { return r.entry.ID == id })
}

func (o *memOutbox) Retry(_ context.Context, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.find(id)
	if i < 0 || !o.rows[i].failed {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	e := &o.rows[i].entry
	o.rows[i].failed = false
	e.Attempts, e.NextAttemptAt, e.FailedAt, e.FailureReason = 0, time.Time{}, time.Time{}, ""
	return nil
}

func (o *memOutbox) Skip(_ context.Context, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.find(id)
	if i < 0 || !o.rows[i].failed {
		return fmt.Errorf("%w: %s", outbox.ErrNotFailed, id)
	}
	o.rows = slices.Delete(o.rows, i, i+1)
	return nil
}

func (o *memOutbox) PlantDamaged(t *testing.T, queueURL string) string {
	e, err := outbox.NewEntry(queueURL, outboxtest.Job(0), time.Unix(1, 0))
	require.NoError(t, err)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.first--
	o.rows = slices.Insert(o.rows, 0, &memRow{seq: o.first, entry: outbox.Entry{ID: e.ID, QueueURL: queueURL, CreatedAt: e.CreatedAt}, stored: `{"v":1,"queue":`})
	return e.ID
}

// memStore is one relay's view of the outbox.
type memStore struct{ outbox *memOutbox }

func (s *memStore) Name() string { return "memory" }

// Claim takes due rows in seq order: of a FIFO group only from its earliest
// unpublished row on, and none behind a failed, waiting, young or claimed row.
func (s *memStore) Claim(_ context.Context, limit int, minAge time.Duration) (outbox.Claim, error) {
	o := s.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.claims++
	c := &memClaim{store: s, token: o.claims}
	blocked := map[string]bool{}
	for _, r := range o.rows {
		if len(c.list) == limit {
			break
		}
		group := groupOf(r.entry)
		if group != "" && blocked[group] {
			continue
		}
		due := !r.failed && r.claim == 0 && !r.entry.NextAttemptAt.After(now) && !r.entry.CreatedAt.After(now.Add(-minAge))
		if !due {
			blocked[group] = true
			continue
		}
		r.claim, r.owner = c.token, s
		claimed := outbox.Claimed{Entry: r.entry}
		claimed.Damage = claimed.DecodeJob(r.stored, true)
		blocked[group] = claimed.Damage != nil // a damaged row is failed: it parks its group
		c.list = append(c.list, claimed)
	}
	return c, nil
}

func (s *memStore) Summary(ctx context.Context) (outbox.Summary, error) {
	return s.outbox.Summary(ctx)
}

func (s *memStore) Wait(ctx context.Context, d time.Duration) {
	s.outbox.mu.Lock()
	written := s.outbox.written
	s.outbox.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-written:
	case <-ctx.Done():
	}
}

func (s *memStore) Close() {}

type memClaim struct {
	store *memStore
	token int
	list  []outbox.Claimed
}

func (c *memClaim) Entries() []outbox.Claimed { return c.list }

func (c *memClaim) Settle(_ context.Context, verdicts []outbox.Verdict) error {
	o := c.store.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for _, v := range verdicts {
		i := o.find(v.ID)
		if i < 0 || o.rows[i].claim != c.token {
			continue // the claim ended (a crash): the next relay has the row
		}
		r := o.rows[i]
		e := &r.entry
		switch v.Kind {
		case outbox.VerdictPublished:
			o.rows = slices.Delete(o.rows, i, i+1)
		case outbox.VerdictRetry:
			e.Attempts, e.NextAttemptAt, e.LastError = v.Attempts, v.Next, v.Err.Error()
		case outbox.VerdictFailed:
			r.failed = true
			e.Attempts, e.FailedAt, e.FailureReason, e.LastError = v.Attempts, now, v.Err.Error(), v.Err.Error()
		}
	}
	c.release()
	return nil
}

func (c *memClaim) Release(context.Context) {
	c.store.outbox.mu.Lock()
	defer c.store.outbox.mu.Unlock()
	c.release()
}

func (c *memClaim) release() {
	for _, r := range c.store.outbox.rows {
		if r.claim == c.token {
			r.claim, r.owner = 0, nil
		}
	}
}
