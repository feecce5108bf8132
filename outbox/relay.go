package outbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/producer"
)

// Defaults for [RelayConfig].
const (
	// DefaultBatchSize is how many entries a relay claims at a time.
	DefaultBatchSize = 100
	// DefaultPollInterval is how long an idle relay waits before it looks again (a
	// PostgreSQL relay is woken sooner by NOTIFY).
	DefaultPollInterval = time.Second
	// DefaultReportInterval is how often a relay reports EventBacklog.
	DefaultReportInterval = 10 * time.Second
	// DefaultDrainTimeout bounds Run's graceful stop.
	DefaultDrainTimeout = 20 * time.Second
	// DefaultMaxAttempts is how many failed sends mark an entry failed. With the
	// default backoff (2 s doubling to 10 min, full jitter) they take about an hour.
	DefaultMaxAttempts = 20
	// DefaultClaimLease is how long a leased claim on an entry lasts (outboxdynamo).
	DefaultClaimLease = time.Minute
	// DefaultInFlight is how many SendMessageBatch calls a relay cycle (or a
	// [Publish]) keeps in flight at once: a cycle of DefaultBatchSize entries (10
	// calls) goes out in one round trip.
	DefaultInFlight = 10
	// MaxInFlight is the largest RelayConfig.InFlight: a cycle of 1,000 entries makes
	// at most 100 calls.
	MaxInFlight = 100
)

// RelayConfig configures a [Relay]. The zero value takes the defaults.
type RelayConfig struct {
	// BatchSize is how many entries one cycle claims and publishes (in SendMessageBatch
	// calls of 10), from 1 to 1000; if zero, DefaultBatchSize (100). On PostgreSQL the
	// claimed rows stay locked for the cycle, so keep cycles short.
	BatchSize int
	// InFlight is how many SendMessageBatch calls of a cycle are in flight at once, from
	// 1 to MaxInFlight (100); if zero, DefaultInFlight (10). With 10 ms per call, one
	// call at a time caps a relay near 1,000 entries/s whatever the store does (measured
	// in docs/benchmarks.md, "Outbox relay with calls in flight"). A FIFO message group
	// never has two calls in flight (its calls go one after the other, each after the
	// previous returned), so a group with many entries in a cycle gains nothing from
	// it; nor does a cycle of at most 10 entries. Entries are settled (removed or
	// marked) only after every call of the cycle returned, each by its own call's
	// result. A FIFO queue without high throughput takes 300 SendMessageBatch calls a
	// second (Amazon SQS Developer Guide, "Troubleshoot FIFO throttling issues"); a
	// throttled call's entries are retried with their backoff.
	InFlight int
	// PollInterval is how long an idle relay waits before it looks again; if zero,
	// DefaultPollInterval (1 s). It is also the wait after a failed cycle.
	PollInterval time.Duration
	// ReportInterval is how often the relay reports EventBacklog; if zero,
	// DefaultReportInterval (10 s); negative: never.
	ReportInterval time.Duration
	// DrainTimeout bounds [Relay.Run]'s graceful stop; if zero, DefaultDrainTimeout.
	DrainTimeout time.Duration
	// MaxAttempts is how many sends of an entry may fail, on the network's, SQS's or
	// the destination's side (a queue that does not exist, access denied, throttling),
	// before the entry is marked failed with [ErrAttemptsExhausted] and its last error;
	// if zero, DefaultMaxAttempts (20); negative: no limit. An entry that can never be
	// sent (refused by SQS or the producer: too large without a claim check, an invalid
	// attribute; or one that cannot be decoded) is marked failed at its first attempt.
	// A failed entry of a FIFO message group parks the group (see [ParkedGroup]).
	MaxAttempts int
	// Backoff is the wait before an entry's next attempt, by the number of its failed
	// attempts (Backoff.Delay(attempts)); the zero value waits 2 s after the first,
	// doubling to 10 min, with full jitter. Meanwhile the relay sends the other entries,
	// and a FIFO message group waits for its earliest entry.
	Backoff sqsworker.Backoff
	// ClaimLease (stores that lease their claims: outboxdynamo) is how long a relay's claim on the entries of a cycle
	// lasts: another relay takes them only after it; if zero, DefaultClaimLease (1 min).
	// A cycle that outlasts it (a send stuck for a minute) may see its entries sent again
	// by another relay, with the same deduplication id and idempotency key. PostgreSQL
	// relays hold row locks for the cycle instead; their claims end with the connection.
	ClaimLease time.Duration
	// MinAge makes the relay claim only entries at least this old (by their creation
	// time); if zero, every entry. Set it on a container relay that sweeps behind a
	// stream relay (outboxdynamo.StreamRelay; say one minute), so that the two seldom send one entry twice.
	MinAge time.Duration
	// Observer is told what the relay does; nil: nothing is told.
	Observer Observer
}

// RelayStats are a relay's counts since it started.
type RelayStats struct {
	// Published entries (SQS confirmed them and they were removed or marked).
	Published int64
	// Failed entries (marked failed: refused, damaged or out of attempts).
	Failed int64
	// Retried is how many times an entry was left for a later cycle (its send failed,
	// or an earlier entry of its FIFO group was not sent).
	Retried int64
	// Cycles is the number of claims made; StoreErrors the number of failed store calls.
	Cycles, StoreErrors int64
}

// Store is one outbox backend as a relay sees it: the seam a store implements (the
// DynamoDB and PostgreSQL stores behind outboxdynamo.NewRelay and outboxpg.NewRelay, or
// a third party's, given to [NewRelay]). The relay calls it from its one goroutine, so
// a Store need not be safe for concurrent use by one relay; several relays (processes)
// may share one outbox, and the guarantees below must hold across them.
// outboxtest.Run checks them.
type Store interface {
	// Name labels the store in events ([Event.Store]), say "postgres".
	Name() string
	// Claim takes up to limit entries that are due (never tried, or past their
	// NextAttemptAt) and created at least minAge ago, in publish order. For a FIFO
	// message group ([Entry.Ordered]) it takes entries only from the group's earliest
	// unpublished entry on, in order, and none of a group whose earliest entry is failed,
	// waiting for its next attempt or claimed by another relay. Claimed entries are taken
	// by no other relay until the claim is settled or released (or, where the store
	// leases them, until the lease ends). An entry that cannot be decoded is claimed
	// with its error ([Claimed.Damage], wrapping [ErrDamaged]); it parks its group. An
	// error with a nil Claim means nothing was taken; an error with a Claim means the
	// store failed part way and the Claim holds what was taken.
	Claim(ctx context.Context, limit int, minAge time.Duration) (Claim, error)
	// Summary counts the unpublished, failed and parked entries (for [EventBacklog]).
	Summary(ctx context.Context) (Summary, error)
	// Wait returns after d, sooner when new entries may have arrived (a store with
	// notifications), or when ctx ends.
	Wait(ctx context.Context, d time.Duration)
	// Close releases what the store holds for the relay (say a listening connection);
	// the relay calls it once, when its loop ends.
	Close()
}

// Claimed is an entry of a [Claim].
type Claimed struct {
	Entry
	// Damage is set when the stored entry could not be decoded (it wraps ErrDamaged);
	// Entry then has what could be read (at least the ID). The relay marks it failed.
	Damage error
}

// Claim is a set of entries held by one relay cycle.
type Claim interface {
	// Entries returns the claimed entries in publish order.
	Entries() []Claimed
	// Settle records the verdicts (one per entry of the claim, in any order) and ends
	// the claim: together, in one transaction where the store has them. An error means
	// some verdicts may not have been recorded: their entries stay unpublished and are
	// claimed again (a published one is then sent again, with the same deduplication id
	// and idempotency key).
	Settle(ctx context.Context, verdicts []Verdict) error
	// Release ends the claim without a change (best effort: a lease ends by itself).
	Release(ctx context.Context)
}

// VerdictKind is what a relay cycle decided for a claimed entry.
type VerdictKind int

const (
	// VerdictPublished: SQS confirmed the entry: remove (or mark) it.
	VerdictPublished VerdictKind = iota + 1
	// VerdictRetry: the send failed: record Attempts, Next (or now plus Delay) and Err
	// as LastError, keep the entry; it is due again at Next.
	VerdictRetry
	// VerdictFailed: mark the entry failed with Err as its reason, and Attempts; an
	// ordered entry parks its group until retried or skipped.
	VerdictFailed
	// VerdictHeld: not sent (an earlier entry of its group was not): no change.
	VerdictHeld
)

// Verdict is the settlement of one claimed entry.
type Verdict struct {
	// ID is the entry's [Entry.ID].
	ID   string
	Kind VerdictKind
	// Attempts is the entry's failed attempts after this cycle (retry and failed).
	Attempts int
	// Delay (retry) is the backoff before the next attempt; Next is now plus Delay on
	// the relay's clock (a store may apply Delay on its own clock instead).
	Delay time.Duration
	Next  time.Time
	// Err is the send's error (retry), the reason (failed) or why it was held.
	Err error
}

// Relay publishes the entries of an outbox to SQS, in a loop, until it is shut down: it
// claims a batch, sends it through a [producer.Producer] and removes (or marks) what SQS
// confirmed, marking refused entries failed. Make one with outboxpg.NewRelay,
// outboxdynamo.NewRelay or, for another store, [NewRelay]. Its lifecycle is the poller's:
// [Relay.Start], [Relay.Shutdown], or [Relay.Run] for both around a signal. It owns one
// goroutine, which Shutdown ends, and, during a cycle's send, up to RelayConfig.InFlight
// goroutines of SendMessageBatch calls, which the cycle waits for.
type Relay struct {
	store    Store
	producer *producer.Producer
	config   RelayConfig
	observer Observer

	mu       sync.Mutex
	started  bool
	stop     chan struct{} // closed by Shutdown: no new cycle
	done     chan struct{} // closed when the loop returned
	cancel   context.CancelFunc
	stopOnce sync.Once

	published, failed, retried, cycles, storeErrors atomic.Int64
	lastReport                                      time.Time
}

// NewRelay returns a relay that publishes the entries of s through p. It returns an
// error for a nil store or producer and for a config out of its ranges.
func NewRelay(s Store, p *producer.Producer, config RelayConfig) (*Relay, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("outbox: nil store"))
	}
	if p == nil {
		errs = append(errs, errors.New("outbox: nil producer"))
	}
	if config.BatchSize < 0 || config.BatchSize > 1000 {
		errs = append(errs, fmt.Errorf("outbox: RelayConfig.BatchSize %d is outside 1 to 1000", config.BatchSize))
	}
	if config.InFlight < 0 || config.InFlight > MaxInFlight {
		errs = append(errs, fmt.Errorf("outbox: RelayConfig.InFlight %d is outside 1 to %d", config.InFlight, MaxInFlight))
	}
	if config.PollInterval < 0 || config.DrainTimeout < 0 || config.ClaimLease < 0 || config.MinAge < 0 {
		errs = append(errs, errors.New("outbox: RelayConfig.PollInterval, DrainTimeout, ClaimLease and MinAge must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if config.BatchSize == 0 {
		config.BatchSize = DefaultBatchSize
	}
	if config.InFlight == 0 {
		config.InFlight = DefaultInFlight
	}
	if config.PollInterval == 0 {
		config.PollInterval = DefaultPollInterval
	}
	if config.ReportInterval == 0 {
		config.ReportInterval = DefaultReportInterval
	}
	if config.DrainTimeout == 0 {
		config.DrainTimeout = DefaultDrainTimeout
	}
	if config.MaxAttempts == 0 {
		config.MaxAttempts = DefaultMaxAttempts
	}
	if config.ClaimLease == 0 {
		config.ClaimLease = DefaultClaimLease
	}
	observer := config.Observer
	if observer == nil {
		observer = nopObserver{}
	}
	return &Relay{store: s, producer: p, config: config, observer: observer}, nil
}

// Start starts the relay's loop and returns at once. ctx is the parent of every store
// and SQS call; its end stops the relay abruptly (use Shutdown to stop it gracefully).
// It returns an error when the relay was started before.
func (r *Relay) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("outbox: relay already started")
	}
	r.started = true
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	ctx, r.cancel = context.WithCancel(ctx)
	go r.loop(ctx) // owned by the relay: ends at Shutdown or ctx's end
	return nil
}

// Shutdown stops the relay gracefully: no new cycle starts; the cycle in progress
// finishes its send and settles what SQS confirmed, so nothing is sent twice by this
// relay. If ctx ends first, the cycle is cancelled (its claimed entries stay unpublished
// or, when already sent, are sent again later by a relay) and Shutdown returns ctx's
// error after the loop returned. Shutdown of a relay never started returns nil.
func (r *Relay) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if !started {
		return nil
	}
	r.stopOnce.Do(func() { close(r.stop) })
	select {
	case <-r.done:
		r.cancel()
		return nil
	case <-ctx.Done():
		r.cancel()
		<-r.done
		return ctx.Err()
	}
}

// Run starts the relay and shuts it down gracefully (within Config.DrainTimeout) when
// ctx ends or the process gets SIGINT or SIGTERM. It returns nil after a graceful stop.
func (r *Relay) Run(ctx context.Context) error {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := r.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-signals:
	}
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.config.DrainTimeout)
	defer cancel()
	return r.Shutdown(drain)
}

// Stats returns the relay's counts so far.
func (r *Relay) Stats() RelayStats {
	return RelayStats{
		Published: r.published.Load(), Failed: r.failed.Load(), Retried: r.retried.Load(),
		Cycles: r.cycles.Load(), StoreErrors: r.storeErrors.Load(),
	}
}

func (r *Relay) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func (r *Relay) loop(ctx context.Context) {
	defer close(r.done)
	defer r.store.Close()
	for !r.stopping() && ctx.Err() == nil {
		r.report(ctx)
		full, err := r.cycle(ctx)
		if err != nil {
			r.storeErrors.Add(1)
			r.observe(ctx, Event{Kind: EventStoreError, Err: err})
		}
		if full && err == nil {
			continue
		}
		waitCtx, cancel := context.WithCancel(ctx)
		go func() { // owned by this wait: ends with it
			select {
			case <-r.stop:
				cancel()
			case <-waitCtx.Done():
			}
		}()
		r.store.Wait(waitCtx, r.config.PollInterval)
		cancel()
	}
}

// report tells the observer the backlog when ReportInterval has passed.
func (r *Relay) report(ctx context.Context) {
	if r.config.ReportInterval < 0 || time.Since(r.lastReport) < r.config.ReportInterval {
		return
	}
	r.lastReport = time.Now()
	summary, err := r.store.Summary(ctx)
	if err != nil {
		r.storeErrors.Add(1)
		r.observe(ctx, Event{Kind: EventStoreError, Err: err})
		return
	}
	r.observe(ctx, Event{Kind: EventBacklog, Backlog: summary.Unpublished, Lag: max(summary.OldestUnpublished, 0),
		Failed: summary.Failed, Parked: summary.ParkedGroups})
}

func (r *Relay) observe(ctx context.Context, ev Event) {
	ev.Store = r.store.Name()
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.observer.ObserveOutbox(ctx, ev)
}
