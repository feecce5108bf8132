package sqsworker

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// MaxVisibilityTimeout is SQS's limit on a message's visibility timeout: 12 hours from
// the receive (ChangeMessageVisibility rejects more; see "Visibility timeout" in the SQS
// developer guide).
const MaxVisibilityTimeout = 12 * time.Hour

// VisibilitySafetyMargin is kept free below [MaxVisibilityTimeout] when a delay is clamped,
// so clock skew between this process and SQS never pushes a request over the limit.
const VisibilitySafetyMargin = 30 * time.Second

const (
	// DefaultBackoffBase is the delay before the second attempt when Backoff.Base is zero.
	DefaultBackoffBase = 2 * time.Second
	// DefaultBackoffCap is the largest delay when Backoff.Cap is zero.
	DefaultBackoffCap = 10 * time.Minute
)

// Jitter selects how [Backoff] randomises its delays.
type Jitter int

const (
	// JitterFull draws the delay uniformly from [0, exponential delay] ("full jitter",
	// AWS Architecture Blog, "Exponential Backoff And Jitter"). The default.
	JitterFull Jitter = iota
	// JitterNone uses the exponential delay itself: predictable, for tests and schedules.
	JitterNone
)

// Backoff is the retry policy for failed messages: exponential in the receive count,
// with jitter, capped, and never past SQS's 12-hour visibility limit.
//
// The exponential delay for receive count n (n >= 1) is min(Cap, Base * 2^(n-1)).
type Backoff struct {
	// Base is the delay after the first failed receive; if zero, DefaultBackoffBase.
	Base time.Duration
	// Cap is the largest delay; if zero, DefaultBackoffCap. Values above
	// MaxVisibilityTimeout are treated as MaxVisibilityTimeout.
	Cap time.Duration
	// Jitter selects the randomisation; the zero value is JitterFull.
	Jitter Jitter
	// Random returns a number in [0, 1); if nil, math/rand/v2's Float64 (safe for
	// concurrent use). Both hosts call Delay from concurrent goroutines, so Random must be
	// safe for concurrent use: a seeded *rand.Rand is not; wrap its Float64 with
	// [SerializedRandom] (tests inject a seeded source that way).
	Random func() float64
}

// SerializedRandom returns a function that calls random under a mutex, making a source
// that is not safe for concurrent use (a seeded *rand.Rand's Float64) safe to call from
// several goroutines. It returns nil for nil, so Backoff's default still applies.
func SerializedRandom(random func() float64) func() float64 {
	if random == nil {
		return nil
	}
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return random()
	}
}

// Delay returns how long a message that failed on receive number receiveCount should
// stay invisible. sinceFirstReceive is the time since the message was first received:
// the result never exceeds what is left of the 12-hour visibility limit (see
// [ClampVisibility]) and is never negative. A receiveCount below 1 counts as 1.
func (b Backoff) Delay(receiveCount int, sinceFirstReceive time.Duration) time.Duration {
	base, limit := b.Base, b.Cap
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if limit <= 0 {
		limit = DefaultBackoffCap
	}
	limit = min(limit, MaxVisibilityTimeout)
	exponent := max(receiveCount, 1) - 1
	delay := limit
	// base * 2^exponent, computed in float64 to avoid overflow on large receive counts.
	if grown := float64(base) * math.Exp2(float64(exponent)); grown < float64(limit) {
		delay = time.Duration(grown)
	}
	if b.Jitter == JitterFull {
		random := b.Random
		if random == nil {
			random = rand.Float64
		}
		delay = time.Duration(random() * float64(delay))
	}
	return ClampVisibility(delay, sinceFirstReceive)
}

// ClampVisibility bounds a requested visibility delay to [0, 12 h - sinceReceive -
// VisibilitySafetyMargin]: what SQS still accepts for a message received sinceReceive ago.
func ClampVisibility(delay, sinceReceive time.Duration) time.Duration {
	remaining := MaxVisibilityTimeout - max(sinceReceive, 0) - VisibilitySafetyMargin
	return max(min(delay, remaining), 0)
}

// VisibilitySeconds converts a delay to the whole seconds SQS's VisibilityTimeout takes,
// rounding up (a 1.2 s delay becomes 2 s) and bounding to [0, 43200].
func VisibilitySeconds(delay time.Duration) int32 {
	seconds := math.Ceil(delay.Seconds())
	return int32(max(min(seconds, MaxVisibilityTimeout.Seconds()), 0))
}
