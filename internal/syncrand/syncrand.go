// Package syncrand makes a random source that is not safe for concurrent use safe to
// call from several goroutines. The hosts (for sqsworker.Backoff.Random) and the
// idempotency middleware (for its jitter) wrap what a user passes in with it, so a
// seeded *rand.Rand's Float64 is safe to give them.
package syncrand

import "sync"

// Serialize returns a function that calls random under a mutex. It returns nil for nil,
// so the caller's default source still applies.
func Serialize(random func() float64) func() float64 {
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
