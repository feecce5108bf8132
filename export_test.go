package sqsworker

import "time"

// DelayClock sets the clock DelayMiddleware compares due times with (time.Now outside
// tests), for the emulator tests of package sqsworker_test.
func DelayClock(now func() time.Time) DelayOption {
	return func(config *delay) { config.now = now }
}
