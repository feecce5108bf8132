package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/syncrand"
)

// Defaults for [Config].
const (
	// DefaultTTL is how long a completed record suppresses duplicates.
	DefaultTTL = time.Hour
	// DefaultInProgressTTL is the lease of a claim between renewals: the middleware
	// renews it every third of it while the handler runs, so a crashed run blocks its key
	// for at most this long (plus DefaultClockSkewAllowance).
	DefaultInProgressTTL = 10 * time.Second
	// DefaultClockSkewAllowance is how long after its end a lease still counts as held,
	// so a host whose clock runs ahead takes nothing over early.
	DefaultClockSkewAllowance = 2 * time.Second
	// DefaultDuplicateWait is how long a duplicate of a running claim waits in process
	// (reading the record) for the original to finish before it is deferred.
	DefaultDuplicateWait = 5 * time.Second
	// DefaultMinRemaining is the least time the handler's context must have left for a
	// claim; with less, the handler could not finish before its lease ends.
	DefaultMinRemaining = time.Second
	// DefaultMaxDeferJitter is the largest random delay added to the rest of a lease when
	// a duplicate is deferred, so deferred duplicates do not all return at the same time.
	DefaultMaxDeferJitter = 2 * time.Second
	// DefaultStoreTimeout bounds completing or releasing a record after the handler
	// returned.
	DefaultStoreTimeout = 5 * time.Second
)

// minInProgressTTL is the shortest lease Config.Validate accepts.
const minInProgressTTL = 30 * time.Millisecond

// KeyFunc returns a message's idempotency key. Returning "" or an error matching
// [ErrKeyMissing] means the message has no key; any other error is returned as the
// message's outcome unchanged.
type KeyFunc func(message *sqsworker.Message) (string, error)

// PayloadHashFunc returns the hash of a message's validated fields. A record stores it,
// and a duplicate whose hash differs is rejected with [ErrPayloadMismatch]. Returning ""
// disables validation for that message.
type PayloadHashFunc func(message *sqsworker.Message) (string, error)

// Config configures [Middleware]. The zero value is usable: the producer's idempotency
// key attribute (else the job id, else the message id) as key, the whole body validated, completed
// records kept for one hour.
type Config struct {
	// KeyFunc specifies the idempotency key of a message; if nil, defaults to
	// [KeyFromProducer]: the "idempotency-key" attribute when present, else the job id
	// ("job-id"), else the message id. See also [KeyFromJSONField] and [KeyFromMessageAttribute].
	KeyFunc KeyFunc
	// KeyPrefix specifies a namespace for keys (for example the function or worker name),
	// stored as KeyPrefix + "#" + key; if empty, keys are stored as they are. See
	// [StoredKey] for when a key is stored as its digest (over 1024 bytes, over DynamoDB's
	// 2048-byte partition key limit with the prefix, not UTF-8, or spelled "sha256:...").
	// At most MaxKeyPrefixBytes (1976) bytes of UTF-8.
	KeyPrefix string
	// KeyOptional specifies what happens to a message without a key: if false (the
	// default), it fails permanently with reason "IdempotencyKeyMissing" (the host sends
	// it to the dead-letter queue); if true, its handler runs without idempotency (no
	// record is read or written for it; a warning "idempotency bypassed: missing key" is
	// logged per message). A missing key is never hashed as null or "".
	KeyOptional bool
	// PayloadHash specifies the hash validated between a record and its duplicates; if
	// nil, defaults to [HashBody]. See also [HashJSONFields]. An error fails the message
	// permanently with reason "IdempotencyPayloadInvalid".
	PayloadHash PayloadHashFunc
	// TTL specifies how long a completed record suppresses duplicates, from completion;
	// if zero, defaults to DefaultTTL (1 h). Stored in epoch seconds, rounded up.
	TTL time.Duration
	// InProgressTTL specifies the lease of a claim between renewals; if zero, defaults
	// to DefaultInProgressTTL (10 s). While the handler runs, a heartbeat goroutine
	// renews the lease every InProgressTTL/3 ([Store.Renew], conditioned on the lease),
	// never past the handler context's deadline; it stops when the handler returns, and
	// also once the lease can no longer be renewed: the handler's context is done (the
	// host gave it up), the lease has reached that deadline, or the lease was lost. A
	// handler that ignores its context thus keeps no heartbeat, and its key is free
	// InProgressTTL + ClockSkewAllowance after the last renewal, as a crashed run's is.
	// When a renewal finds the lease taken over, the handler's context is cancelled with
	// an error matching [ErrLeaseLost]. At least 30 ms.
	InProgressTTL time.Duration
	// ClockSkewAllowance specifies how long past its in_progress_expiry a lease still
	// counts as held before another host may take the key over: the claim compares
	// lease ends with now - ClockSkewAllowance, so a host whose clock runs that much
	// ahead cannot take over a live lease. If zero, defaults to DefaultClockSkewAllowance
	// (2 s); if negative, none.
	ClockSkewAllowance time.Duration
	// DuplicateWait specifies how long a duplicate whose original is running waits in
	// process for it, reading the record with a consistent read every 20 ms to 250 ms
	// (doubling): when the original completes, the duplicate settles as a completed
	// duplicate without another receive; when it fails (record released) or its lease
	// ends, the duplicate claims the key. The wait also ends at the context's deadline
	// minus MinRemaining. If the original still runs after it, the duplicate is deferred
	// (see [Middleware]): until the original's deadline when its lease was renewed during
	// the wait, or only until its lease can be taken over when it was not renewed for
	// InProgressTTL/2 (a crashed original; so keep DuplicateWait >= InProgressTTL/2). If zero, defaults to DefaultDuplicateWait (5 s); if negative,
	// duplicates are deferred at once.
	DuplicateWait time.Duration
	// MinRemaining specifies the least time the handler's context must have left before
	// its deadline for the key to be claimed; with less, nothing is written and the
	// message fails with [ErrInsufficientTime] (retryable). If zero, defaults to
	// DefaultMinRemaining (1 s).
	MinRemaining time.Duration
	// MaxDeferJitter specifies the largest random delay added to the lease's remaining
	// time when a duplicate is deferred; if zero, defaults to DefaultMaxDeferJitter
	// (2 s); if negative, no jitter is added.
	MaxDeferJitter time.Duration
	// StoreTimeout specifies how long completing or releasing the record may take after
	// the handler returned. Those calls ignore the cancellation of the handler's context,
	// so a handler stopped by its deadline still releases its lease. If zero, defaults
	// to DefaultStoreTimeout (5 s).
	StoreTimeout time.Duration
	// OnCompletedDuplicate specifies a hook for a duplicate of a completed key, called
	// instead of the handler with the stored record (record.Result holds what the
	// original run passed to [SetResult]). Its error becomes the message's outcome. If
	// nil, such duplicates succeed (return nil) without further action.
	OnCompletedDuplicate func(ctx context.Context, message *sqsworker.Message, record Record) error
	// Clock specifies the time source for leases and expiry; if nil, defaults to
	// SystemClock. Tests inject a fake to exercise expiry without sleeping.
	Clock Clock
	// Random specifies the source of jitter, returning numbers in [0, 1); if nil,
	// defaults to math/rand/v2's Float64. Calls are serialised, so a seeded
	// *rand.Rand's Float64 is safe.
	Random func() float64
	// Logger specifies where decisions and store failures are logged; if nil,
	// slog.Default() (read when Middleware is called), as the hosts do. A suppressed
	// duplicate leaves one info line ("idempotency: already completed; skipping the
	// handler"); pass slog.New(slog.DiscardHandler) to discard the logs. Message bodies are
	// never logged.
	Logger *slog.Logger
	// Observer specifies who is told each decision (see [EventKind]), for metrics; if
	// nil, no one is.
	Observer Observer
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.KeyFunc == nil {
		c.KeyFunc = KeyFromProducer
	}
	if c.PayloadHash == nil {
		c.PayloadHash = HashBody
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.InProgressTTL == 0 {
		c.InProgressTTL = DefaultInProgressTTL
	}
	if c.ClockSkewAllowance == 0 {
		c.ClockSkewAllowance = DefaultClockSkewAllowance
	}
	c.ClockSkewAllowance = max(c.ClockSkewAllowance, 0)
	if c.DuplicateWait == 0 {
		c.DuplicateWait = DefaultDuplicateWait
	}
	c.DuplicateWait = max(c.DuplicateWait, 0)
	if c.MinRemaining == 0 {
		c.MinRemaining = DefaultMinRemaining
	}
	if c.MaxDeferJitter == 0 {
		c.MaxDeferJitter = DefaultMaxDeferJitter
	}
	if c.MaxDeferJitter < 0 {
		c.MaxDeferJitter = 0
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Random == nil {
		c.Random = rand.Float64
	}
	// Messages run concurrently: a seeded *rand.Rand is not safe for that.
	c.Random = syncrand.Serialize(c.Random)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

// Validate reports every invalid field of c, joined with errors.Join; nil when c is
// valid. Zero fields are valid (they take defaults).
func (c Config) Validate() error {
	var errs []error
	negative := func(name string, value time.Duration) {
		if value < 0 {
			errs = append(errs, fmt.Errorf("idempotency: Config.%s is negative (%s)", name, value))
		}
	}
	negative("TTL", c.TTL)
	negative("InProgressTTL", c.InProgressTTL)
	negative("MinRemaining", c.MinRemaining)
	negative("StoreTimeout", c.StoreTimeout)
	if c.InProgressTTL > 0 && c.InProgressTTL < minInProgressTTL {
		errs = append(errs, fmt.Errorf("idempotency: Config.InProgressTTL (%s) is below %s: its renewals (every third) would flood the store", c.InProgressTTL, minInProgressTTL))
	}
	if err := validatePrefix(c.KeyPrefix); err != nil {
		errs = append(errs, fmt.Errorf("idempotency: Config.KeyPrefix: %w", err))
	}
	if c.TTL > 0 && c.TTL < time.Second {
		errs = append(errs, fmt.Errorf("idempotency: Config.TTL (%s) is below one second, the precision of the expiration attribute", c.TTL))
	}
	return errors.Join(errs...)
}
