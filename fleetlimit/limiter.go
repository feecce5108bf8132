package fleetlimit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/table"
)

// Defaults for [Config].
const (
	// DefaultLease is how long a permit holds without renewal: a crashed worker's permits
	// come back this long after its last renewal at the latest.
	DefaultLease = 30 * time.Second
	// MinLease is the shortest Config.Lease: renewals go every third of it, and a
	// DynamoDB call takes milliseconds to tens of milliseconds.
	MinLease = time.Second
	// DefaultMaxWait is the longest a message waits in its worker for its rate start
	// before it is deferred instead.
	DefaultMaxWait = 10 * time.Second
	// DefaultStartLead is how far ahead a rate start is reserved by default.
	DefaultStartLead = 250 * time.Millisecond
	// DefaultRetryDelay is the shortest deferral of a message that found no permit free;
	// each deferral is between it and twice it (jitter, so deferred messages do not come
	// back together).
	DefaultRetryDelay = 2 * time.Second
	// SlotsPerItem is how many permits one DynamoDB item holds; a limit of more permits
	// is spread over ceil(Concurrency/SlotsPerItem) items (shards). Sixteen permits keep
	// an item under 1 KB, one write capacity unit per write (see the package docs).
	SlotsPerItem = 16
	// AttributePriorReceives is the message attribute (Number) a hop carries: how many
	// times SQS handed out the job's earlier copies, so the attempts of a job re-sent to
	// spare its redrive budget can still be counted (see [PriorReceives]).
	AttributePriorReceives = "prior-receives"
	// ReasonBusy is the DeferError reason of a message deferred because its key had no
	// permit or rate start free.
	ReasonBusy = "FleetLimitBusy"
)

// rateHeadroom is the share of Config.Rate the bucket grants at: reserved starts
// 1/(0.95 × rate) apart put rate+1 of them 1.0526 s apart at least. A handler starts
// within lateTolerance of its reserved instant or not at all, which leaves 27 ms for
// the way from the handler's start to the downstream's own clock.
const rateHeadroom = 0.95

// lateTolerance is how late after its reserved instant a rate-limited handler may still
// start; a later one (its permit took longer than Config.StartLead, or its goroutine
// ran late: timers fire over 10 ms late on a loaded machine) gives the start up and is
// deferred, so the starts keep their spacing.
const lateTolerance = 25 * time.Millisecond

// Config configures a [Limiter]. Every worker that shares a limit gives it the same
// Table, Name, Concurrency, Rate and Burst.
type Config struct {
	// Table is the DynamoDB table (package table's schema: string key "id", TTL on
	// "expiration"), shared with idempotency, unique jobs and the scheduler. Required.
	Table string
	// Name names the limit in the table: workers with the same Name share its permits
	// and bucket. Required; no "#".
	Name string
	// Key returns the key a message is limited by (its tenant, the API it calls); a
	// message whose key is "" is not limited. If nil, every message has the key "all"
	// (one limit for the whole fleet). Whoever sends to the queue may choose what Key
	// reads, and each distinct key is at most ceil(Concurrency/16) + 1 items.
	Key func(*sqsworker.Message) string
	// RateKey returns the key of a message's rate limit when it differs from its
	// concurrency key (a shared API's rate over every tenant, with a limit per tenant:
	// RateKey returns the API's name, Key the tenant); if nil, Key. A message whose
	// RateKey is "" has no rate limit. Give a job's rate and concurrency limits to one
	// Limiter: chained as two middlewares, the inner one's permit write would come
	// between the outer one's reserved instant and the handler's start.
	RateKey func(*sqsworker.Message) string
	// Concurrency is the most handlers of one key running at once across every worker
	// sharing the limit; 0 means none. Negative values are rejected.
	Concurrency int
	// Rate is the most handler starts of one key per second across every worker
	// sharing the limit; 0 means none. Starts are reserved at 95% of Rate, each for an
	// instant at least 1/(0.95 × Rate) after the one before, and a handler starts
	// within 25 ms of its instant or is deferred; with Burst 1 no one-second window
	// therefore holds more than Rate starts, by any clock that agrees with the workers'.
	// Negative values, NaN and infinity are rejected.
	Rate float64
	// RateShards spreads each rate key over this many items, each granting
	// Rate/RateShards (a message takes its start from one at random); if zero, 1. One
	// item takes about 1,000 writes a second (DynamoDB's per-partition limit), and
	// every start is one write or two: give a rate above 400 starts a second one shard
	// per 400 (see the package docs). Starts stay within Rate per second in total;
	// with several shards a start may wait for its shard while another is idle.
	RateShards int
	// Burst is how many starts may follow one another at once after a quiet spell; if
	// zero, 1. It requires Rate.
	Burst int
	// Lease is how long a permit holds without renewal; if zero, DefaultLease (30 s). A
	// permit is renewed every Lease/3 while its handler runs; at least MinLease.
	Lease time.Duration
	// MaxWait is the longest a message waits in its worker for its rate start before it
	// is deferred; if zero, DefaultMaxWait (10 s). The host's visibility heartbeat (or a
	// Lambda invocation's deadline) must cover it.
	MaxWait time.Duration
	// StartLead is how far ahead of now a rate start is reserved, so that the permit
	// (when Concurrency is set too) is taken and the worker is awake before the
	// instant comes; if zero, DefaultStartLead (250 ms). It must exceed DynamoDB's write
	// latency (single-digit milliseconds on AWS, far more on a loaded emulator); a
	// handler that misses its instant is deferred. It adds as much to each
	// rate-limited job's start.
	StartLead time.Duration
	// RetryDelay is the shortest deferral of a message that found no permit free (each
	// is between RetryDelay and twice it); if zero, DefaultRetryDelay (2 s).
	RetryDelay time.Duration
	// Hopper, with MaxReceiveCount, spares the redrive budget: a message whose receive
	// count has reached MaxReceiveCount-1 is not deferred again (its next receive would
	// be its last before SQS dead-letters it) but re-sent through Hopper (for example
	// a producer.Producer) with the deferral as its delay and [AttributePriorReceives]
	// counting its receives so far, and the original is deleted. FIFO queues are never
	// hopped (a re-send would reorder the group). Both or neither.
	Hopper sqsworker.Hopper
	// MaxReceiveCount is the queue's redrive policy's maxReceiveCount (see
	// sqsinfo.LoadQueue), used with Hopper.
	MaxReceiveCount int
	// Holder names this worker in its permits; if empty, a random 64-bit number (13
	// characters). Each acquisition adds "/" and a sequence number, so a permit's holder
	// is never another's. Keep it under 20 bytes: a full item of SlotsPerItem permits
	// then stays within 1 KB, one write capacity unit a write.
	Holder string
	// Now is the clock; if nil, time.Now. Workers' clocks must agree to well within the
	// lease and 1/Rate (AWS's Time Sync Service keeps EC2 and Fargate within about a
	// millisecond): a worker whose clock runs ahead sees leases expire and starts fall
	// due early by as much.
	Now func() time.Time
}

// ErrPermitLost is the cause (context.Cause) of a handler context cancelled because its
// permit could not be renewed before it expired, or was found taken by another holder:
// the handler must stop, since another worker may now hold the permit.
var ErrPermitLost = errors.New("fleetlimit: permit lost")

// BusyError reports a key with nothing free now: no permit, or no rate start within
// Config.MaxWait. RetryAfter is when to ask again.
type BusyError struct {
	// Limit is Config.Name; Key the message's key; Kind "concurrency" or "rate".
	Limit, Key, Kind string
	RetryAfter       time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("fleetlimit: limit %s, key %q: no %s free; retry after %s", e.Limit, e.Key, e.Kind, e.RetryAfter)
}

// Limiter enforces one fleet-wide limit. It is safe for concurrent use.
type Limiter struct {
	api    table.API
	config Config
	// interval and tolerance are the rate's emission interval and burst tolerance, in
	// microseconds (generic cell rate algorithm; see rate.go).
	interval, tolerance int64
	sequence            atomic.Uint64

	mu sync.Mutex
	// tats caches each rate item's last known theoretical arrival time (rate.go), so
	// the first write is usually the right one; cleared when it reaches maxCachedKeys.
	tats map[string]int64
}

// maxCachedKeys bounds Limiter.tats.
const maxCachedKeys = 10_000

// New returns the limiter of config, calling DynamoDB through api. It returns an error
// naming every invalid Config field.
func New(api table.API, config Config) (*Limiter, error) {
	var problems []error
	add := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("fleetlimit: "+format, args...))
	}
	if api == nil {
		add("nil DynamoDB client")
	}
	if config.Table == "" {
		add("Config.Table is empty")
	}
	if config.Name == "" || strings.Contains(config.Name, table.Separator) {
		add("Config.Name %q must be non-empty and without %q", config.Name, table.Separator)
	}
	if config.Concurrency < 0 {
		add("Config.Concurrency %d is negative", config.Concurrency)
	}
	if config.Rate < 0 || math.IsNaN(config.Rate) || math.IsInf(config.Rate, 0) {
		add("Config.Rate %v is not a finite number of starts per second, 0 or more", config.Rate)
	}
	if config.Concurrency == 0 && config.Rate == 0 {
		add("neither Config.Concurrency nor Config.Rate is set: the limit limits nothing")
	}
	if config.RateShards < 0 || (config.RateShards > 0 && config.Rate == 0) {
		add("Config.RateShards %d must be 0 or more, and needs Config.Rate", config.RateShards)
	}
	if config.Burst < 0 || (config.Burst > 0 && config.Rate == 0) {
		add("Config.Burst %d must be 0 or more, and needs Config.Rate", config.Burst)
	}
	if config.Lease != 0 && config.Lease < MinLease {
		add("Config.Lease %s is below MinLease (%s)", config.Lease, MinLease)
	}
	if config.MaxWait < 0 || config.RetryDelay < 0 || config.StartLead < 0 {
		add("Config.MaxWait %s, Config.RetryDelay %s and Config.StartLead %s must not be negative", config.MaxWait, config.RetryDelay, config.StartLead)
	}
	if (config.Hopper == nil) != (config.MaxReceiveCount == 0) || config.MaxReceiveCount == 1 || config.MaxReceiveCount < 0 {
		add("Config.Hopper and Config.MaxReceiveCount %d go together, and the count must be 2 or more (one receive to defer, one to hop)", config.MaxReceiveCount)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if config.Key == nil {
		config.Key = func(*sqsworker.Message) string { return "all" }
	}
	if config.RateKey == nil {
		config.RateKey = config.Key
	}
	config.Lease = cmp.Or(config.Lease, DefaultLease)
	config.MaxWait = cmp.Or(config.MaxWait, DefaultMaxWait)
	config.RetryDelay = cmp.Or(config.RetryDelay, DefaultRetryDelay)
	config.StartLead = cmp.Or(config.StartLead, DefaultStartLead)
	config.RateShards = max(config.RateShards, 1)
	if config.Now == nil {
		config.Now = time.Now
	}
	if config.Holder == "" {
		config.Holder = strconv.FormatUint(rand.Uint64(), 36)
	}
	l := &Limiter{api: api, config: config, tats: map[string]int64{}}
	if config.Rate > 0 {
		l.interval = int64(math.Ceil(1e6 * float64(config.RateShards) / (config.Rate * rateHeadroom)))
		l.tolerance = int64(max(config.Burst, 1)-1) * l.interval
	}
	return l, nil
}

// holder returns a holder name no other acquisition has.
func (l *Limiter) holder() string {
	return l.config.Holder + "/" + strconv.FormatUint(l.sequence.Add(1), 10)
}
