package outboxpg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxtest"
)

// lockWaiters counts the backends waiting for an advisory lock.
func lockWaiters(t *testing.T, h *postgresSuite) int {
	t.Helper()
	var n int
	require.NoError(t, h.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n))
	return n
}

// Two writers of one FIFO message group: A is written first and committed 2 s after B's
// writer reached its commit. The relay, polling all along, must not publish B before A:
// per group, the publish order is the commit order, and B's writer, which wrote into
// the group while A's transaction was open, commits after it.
func TestGroupIsPublishedInCommitOrder(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	h := newPostgresSuite(t)
	outboxtest.StartRelay(t, h.relay(t, outboxtest.NewProducer(t, client), outbox.RelayConfig{PollInterval: 20 * time.Millisecond}))
	ctx := context.Background()

	first, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	a, err := h.outbox.Enqueue(ctx, first, queue.URL, outboxtest.GroupJob("G", 1))
	require.NoError(t, err)

	type written struct {
		entries     []outbox.Entry
		committedAt time.Time
		err         error
	}
	second := make(chan written, 1)
	go func() {
		tx, err := h.pool.Begin(ctx)
		if err != nil {
			second <- written{err: err}
			return
		}
		defer func() { _ = tx.Rollback(ctx) }()
		entries, err := h.outbox.Enqueue(ctx, tx, queue.URL, outboxtest.GroupJob("G", 2))
		if err == nil {
			err = tx.Commit(ctx)
		}
		second <- written{entries: entries, committedAt: time.Now(), err: err}
	}()
	// B's writer has committed (and the relay may see B), or waits for A's transaction.
	var b *written
	testenv.Eventually(t, 10*time.Second, "B committed or waiting for A's transaction", func() bool {
		select {
		case w := <-second:
			b = &w
			return true
		default:
			return lockWaiters(t, h) > 0
		}
	})
	time.Sleep(2 * time.Second) // the scenario: A commits 2 s after B's writer reached its commit
	committingA := time.Now()
	require.NoError(t, first.Commit(ctx))
	if b == nil {
		w := testenv.Recv(t, second, 10*time.Second, "B's commit")
		b = &w
	}
	require.NoError(t, b.err)
	got := outboxtest.Drain(t, client, queue.URL, 2, 20*time.Second)
	assert.Equal(t, []string{a[0].ID, b.entries[0].ID}, []string{outboxtest.OutboxID(got[0]), outboxtest.OutboxID(got[1])}, "A, then B")
	assert.True(t, b.committedAt.After(committingA), "B's transaction commits after A's")
}

// Concurrent writers into few FIFO groups, two relays: per group, the order of arrival in
// the queue is the commit order. Commit order is what the writers can tell for sure: an
// entry whose commit returned before another's commit began was committed first (entries
// whose commits overlapped may arrive either way).
func TestConcurrentWritersGroupsArriveInCommitOrder(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	h := newPostgresSuite(t)
	p := outboxtest.NewProducer(t, client)
	for range 2 {
		outboxtest.StartRelay(t, h.relay(t, p, outbox.RelayConfig{PollInterval: 10 * time.Millisecond, BatchSize: 10}))
	}
	const writers, perWriter, groups = 6, 40, 3
	type commit struct {
		id, group  string
		start, end time.Time
	}
	var mu sync.Mutex
	var commits []commit
	var wg sync.WaitGroup
	ctx := context.Background()
	for w := range writers {
		wg.Go(func() {
			random := rand.New(rand.NewPCG(uint64(w), 19))
			for i := range perWriter {
				group := "g" + strconv.Itoa(random.IntN(groups))
				err := func() error {
					tx, err := h.pool.Begin(ctx)
					if err != nil {
						return err
					}
					defer func() { _ = tx.Rollback(ctx) }()
					entries, err := h.outbox.Enqueue(ctx, tx, queue.URL, outboxtest.GroupJob(group, w*1000+i))
					if err != nil {
						return err
					}
					time.Sleep(time.Duration(random.IntN(15)) * time.Millisecond) // the transaction's own work
					c := commit{id: entries[0].ID, group: group, start: time.Now()}
					if err := tx.Commit(ctx); err != nil {
						return err
					}
					c.end = time.Now()
					mu.Lock()
					commits = append(commits, c)
					mu.Unlock()
					return nil
				}()
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := outboxtest.Drain(t, client, queue.URL, writers*perWriter, 60*time.Second)
	arrival := map[string]int{}
	for i, m := range got {
		arrival[outboxtest.OutboxID(m)] = i
	}
	require.Len(t, arrival, writers*perWriter, "each entry arrives once")
	violations := 0
	for _, x := range commits {
		for _, y := range commits {
			if x.group == y.group && x.end.Before(y.start) && arrival[x.id] > arrival[y.id] {
				violations++
				if violations <= 5 {
					t.Errorf("group %s: %s committed before %s began its commit, but arrived after it", x.group, x.id, y.id)
				}
			}
		}
	}
	assert.Zero(t, violations, fmt.Sprintf("pairs out of commit order among %d entries", len(commits)))
}
