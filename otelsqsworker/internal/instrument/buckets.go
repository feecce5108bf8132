package instrument

// Histogram bucket boundaries, in seconds, shared by this module's packages.
var (
	// DelayBuckets bound histograms of how late something happened against when it was
	// due or created (the outbox lag, the scheduler's tick delay): 10 ms to 1 h.
	DelayBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	// DurationBuckets bound histograms of a handler's or a call's run time: 5 ms to 5 min.
	DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	// LagBuckets bound the receive lag (receive time minus SentTimestamp): 10 ms to 1 day.
	LagBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}
)
