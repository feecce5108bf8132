package sqsx

import (
	"time"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// VisibilitySafetyMargin is kept free below [sqsinfo.MaxVisibilityTimeout] when a delay is
// clamped, so clock skew between this process and SQS never pushes a request over the limit.
const VisibilitySafetyMargin = 30 * time.Second

// ClampVisibility bounds a requested visibility delay to [0, 12 h - sinceReceive -
// VisibilitySafetyMargin]: what SQS still accepts for a message received sinceReceive ago.
func ClampVisibility(delay, sinceReceive time.Duration) time.Duration {
	remaining := sqsinfo.MaxVisibilityTimeout - max(sinceReceive, 0) - VisibilitySafetyMargin
	return max(min(delay, remaining), 0)
}

// VisibilitySeconds converts a delay to the whole seconds SQS's VisibilityTimeout takes,
// rounding up (a 1.2 s delay becomes 2 s) and bounding to [0, 43200].
func VisibilitySeconds(delay time.Duration) int32 {
	return ceilSeconds(delay, sqsinfo.MaxVisibilityTimeout)
}

// DelaySeconds converts a delivery delay to SendMessage's DelaySeconds, rounding up and
// bounding to [0, 900].
func DelaySeconds(delay time.Duration) int32 {
	return ceilSeconds(delay, sqsinfo.MaxDelay)
}

// WaitSeconds converts a long-poll wait to ReceiveMessage's WaitTimeSeconds, rounding
// up and bounding to [0, 20].
func WaitSeconds(wait time.Duration) int32 {
	return ceilSeconds(wait, sqsinfo.MaxWaitTime)
}

func ceilSeconds(d, limit time.Duration) int32 {
	d = max(min(d, limit), 0)
	seconds := d / time.Second
	if d%time.Second != 0 {
		seconds++
	}
	return int32(seconds)
}
