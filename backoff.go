package sqsworker

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

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
// with jitter and capped. The hosts never set a visibility past what SQS's 12-hour limit
// leaves of the message's time since its first receive, whatever Delay returns.
//
// The exponential delay for receive count n (n >= 1) is min(Cap, Base * 2^(n-1)).
type Backoff struct {
	// Base is the delay after the first failed receive; if zero, DefaultBackoffBase.
	Base time.Duration
	// Cap is the largest delay; if zero, DefaultBackoffCap. The hosts clamp any delay to
	// SQS's 12-hour visibility limit.
	Cap time.Duration
	// Jitter selects the randomisation; the zero value is JitterFull.
	Jitter Jitter
	// Random returns a number in [0, 1); if nil, math/rand/v2's Float64. Both hosts and
	// [JobBackoff] call Delay from concurrent goroutines and serialise their calls to
	// Random, so a seeded *rand.Rand's Float64 (what tests inject) is safe here; one
	// source not safe for concurrent use must not be shared by two Backoff values.
	Random func() float64
}

// Delay returns how long a message that failed on receive number receiveCount should
// stay invisible, before the hosts clamp it to SQS's visibility limit: never negative,
// at most Cap. A receiveCount below 1 counts as 1.
func (b Backoff) Delay(receiveCount int) time.Duration {
	base, limit := b.Base, b.Cap
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if limit <= 0 {
		limit = DefaultBackoffCap
	}
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
	return max(delay, 0)
}

// Validate reports every problem of the policy, joined into one error, each naming its
// field ("Backoff.Base -1s is negative"): a negative Base or Cap, a Base above a
// non-zero Cap, an unknown Jitter. The zero value is valid. Both hosts and [JobBackoff]
// refuse a policy it rejects, with the same text.
func (b Backoff) Validate() error {
	var problems []error
	if b.Base < 0 {
		problems = append(problems, fmt.Errorf("Backoff.Base %s is negative", b.Base))
	}
	if b.Cap < 0 {
		problems = append(problems, fmt.Errorf("Backoff.Cap %s is negative", b.Cap))
	}
	if b.Base > 0 && b.Cap > 0 && b.Base > b.Cap {
		problems = append(problems, fmt.Errorf("Backoff.Base %s exceeds Backoff.Cap %s", b.Base, b.Cap))
	}
	if b.Jitter != JitterFull && b.Jitter != JitterNone {
		problems = append(problems, fmt.Errorf("Backoff.Jitter %d is not a known jitter mode", b.Jitter))
	}
	return errors.Join(problems...)
}
