// Package buckets holds histogram bucket boundaries shared by this module's packages.
package buckets

// Delay are the boundaries, in seconds, of histograms of how late something happened
// against when it was due or created (the outbox lag, the scheduler's tick delay): 10 ms
// to 1 h.
func Delay() []float64 {
	return []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
}
