package syncrand_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker/internal/syncrand"
)

// TestSerializeMakesASeededSourceSafeForConcurrentUse: a seeded *rand.Rand (not safe for
// concurrent use) called from many goroutines through Serialize gives, under the race
// detector, exactly the numbers the same seed gives in sequence; nil stays nil.
func TestSerializeMakesASeededSourceSafeForConcurrentUse(t *testing.T) {
	assert.Nil(t, syncrand.Serialize(nil))
	const goroutines, calls = 8, 100
	random := syncrand.Serialize(rand.New(rand.NewPCG(1, 2)).Float64)
	var mu sync.Mutex
	got := map[float64]int{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				value := random()
				mu.Lock()
				got[value]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sequence := rand.New(rand.NewPCG(1, 2))
	want := map[float64]int{}
	for range goroutines * calls {
		want[sequence.Float64()]++
	}
	assert.Equal(t, want, got)
}
