package sqsworker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffWithoutJitterIsExponentialAndCapped(t *testing.T) {
	backoff := Backoff{Base: 2 * time.Second, Cap: 4 * time.Second, Jitter: JitterNone}
	// C14: base 2 s, cap 4 s gives 2, 4, 4 between the four attempts.
	assert.Equal(t, 2*time.Second, backoff.Delay(1))
	assert.Equal(t, 4*time.Second, backoff.Delay(2))
	assert.Equal(t, 4*time.Second, backoff.Delay(3))
	assert.Equal(t, 4*time.Second, backoff.Delay(1000), "large receive counts must not overflow")
	assert.Equal(t, 2*time.Second, backoff.Delay(0), "receive count below 1 counts as 1")
	assert.Equal(t, 2*time.Second, backoff.Delay(-5))
}

func TestBackoffDefaults(t *testing.T) {
	backoff := Backoff{Jitter: JitterNone}
	assert.Equal(t, DefaultBackoffBase, backoff.Delay(1))
	assert.Equal(t, DefaultBackoffCap, backoff.Delay(60))
}

func TestBackoffFullJitterStaysInRange(t *testing.T) {
	source := rand.New(rand.NewPCG(1, 2))
	backoff := Backoff{Base: time.Second, Cap: 30 * time.Second, Random: source.Float64}
	for receiveCount := 1; receiveCount <= 20; receiveCount++ {
		ceiling := min(time.Second<<(receiveCount-1), 30*time.Second)
		var smallest, largest time.Duration = ceiling, 0
		for range 200 {
			delay := backoff.Delay(receiveCount)
			assert.GreaterOrEqual(t, delay, time.Duration(0))
			assert.LessOrEqual(t, delay, ceiling)
			smallest, largest = min(smallest, delay), max(largest, delay)
		}
		// Full jitter spreads over the whole range, not a narrow band.
		assert.Less(t, smallest, ceiling/4, "receive count %d", receiveCount)
		assert.Greater(t, largest, ceiling*3/4, "receive count %d", receiveCount)
	}
	// The edges of the random source map to the edges of the range.
	assert.Equal(t, time.Duration(0), Backoff{Base: time.Second, Random: func() float64 { return 0 }}.Delay(1))
	assert.Equal(t, time.Second*99/100, Backoff{Base: time.Second, Random: func() float64 { return 0.99 }}.Delay(1))
}

func FuzzBackoffDelay(f *testing.F) {
	f.Add(int64(time.Second), int64(time.Minute), 3, int64(0), 0.5)
	f.Add(int64(13*time.Hour), int64(13*time.Hour), 1, int64(time.Hour), 0.99)
	f.Add(int64(-1), int64(-1), -7, int64(-time.Hour), 0.0)
	f.Fuzz(func(t *testing.T, base, limit int64, receiveCount int, _ int64, random float64) {
		if random < 0 || random >= 1 || random != random {
			random = 0.5
		}
		backoff := Backoff{Base: time.Duration(base), Cap: time.Duration(limit), Random: func() float64 { return random }}
		capped := time.Duration(limit)
		if capped <= 0 {
			capped = DefaultBackoffCap
		}
		// The hosts clamp to SQS's limit (internal/settle's TestPlanNeverPassesTheTwelveHourLimit);
		// Delay itself stays in [0, Cap].
		if delay := backoff.Delay(receiveCount); delay < 0 || delay > capped {
			t.Fatalf("delay %s outside [0, %s]", delay, capped)
		}
	})
}
