package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/sqsworker/sqsworker"
)

// Defaults for [Config].
const (
	// DefaultTTL is how long a completed record suppresses duplicates.
	DefaultTTL = time.Hour
	// DefaultInProgressTTL is the lease for a handler whose context has no deadline.
	// Both hosts give handlers a deadline (the poller its per-message hard timeout, the
	// Lambda adapter the invocation deadline), so it applies only to other callers. It
	// bounds how long a crashed run blocks its duplicates.
	DefaultInProgressTTL = 5 * time.Minute
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

// maxKeyLength is the longest key stored as is; longer keys are stored as a SHA-256
// digest.
const maxKeyLength = 1024

// KeyFunc returns a message's idempotency key. Returning "" or an error matching
// [ErrKeyMissing] means the message has no key; any other error is returned as the
// message's outcome unchanged.
type KeyFunc func(message *sqsworker.Message) (string, error)

// PayloadHashFunc returns the hash of a message's validated fields. A record stores it,
// and a duplicate whose hash differs is rejected with [ErrPayloadMismatch]. Returning ""
// disables validation for that message.
type PayloadHashFunc func(message *sqsworker.Message) (string, error)

// Config configures [Middleware]. The zero value is usable: the producer's idempotency
// key attribute (else the message id) as key, the whole body validated, completed
// records kept for one hour.
type Config struct {
	// KeyFunc specifies the idempotency key of a message; if nil, defaults to
	// [KeyFromProducer]: the "idempotency-key" attribute when present, else the message
	// id. See also [KeyFromJSONField] and [KeyFromMessageAttribute].
	KeyFunc KeyFunc
	// KeyPrefix specifies a namespace for keys (for example the function or worker name),
	// stored as KeyPrefix + "#" + key; if empty, keys are stored as they are. A key longer
	// than 1024 bytes is first replaced by "sha256:" + its hex digest (DynamoDB
	// partition keys hold at most 2048 bytes).
	KeyPrefix string
	// KeyOptional specifies what happens to a message without a key: if false (the
	// default), it fails permanently with reason "IdempotencyKeyMissing" (the host sends
	// it to the dead-letter queue); if true, its handler runs without idempotency.
	KeyOptional bool
	// PayloadHash specifies the hash validated between a record and its duplicates; if
	// nil, defaults to [HashBody]. See also [HashJSONFields]. An error fails the message
	// permanently with reason "IdempotencyPayloadInvalid".
	PayloadHash PayloadHashFunc
	// TTL specifies how long a completed record suppresses duplicates, from completion;
	// if zero, defaults to DefaultTTL (1 h). Stored in epoch seconds, rounded up.
	TTL time.Duration
	// InProgressTTL specifies the lease when the handler's context has no deadline; if
	// zero, defaults to DefaultInProgressTTL (5 min). With a deadline, the lease ends at
	// the deadline.
	InProgressTTL time.Duration
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
	// defaults to math/rand/v2's Float64.
	Random func() float64
	// Logger specifies where decisions and store failures are logged; if nil, logs are
	// discarded. Message bodies are never logged.
	Logger *slog.Logger
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
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
	if c.TTL > 0 && c.TTL < time.Second {
		errs = append(errs, fmt.Errorf("idempotency: Config.TTL (%s) is below one second, the precision of the expiration attribute", c.TTL))
	}
	return errors.Join(errs...)
}
