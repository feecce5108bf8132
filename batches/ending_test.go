package batches

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker"
)

// TestEndingFollowsTheHosts: an outcome ends a batch job exactly when the hosts finish
// its message: success, a permanent failure, a cancellation, or a retry or deferral at
// the last receive (the redrive policy's maxReceiveCount) or the job type's attempt
// limit.
func TestEndingFollowsTheHosts(t *testing.T) {
	failed := errors.New("boom")
	for _, tc := range []struct {
		name    string
		err     error
		receive int
		want    end
		final   bool
	}{
		{"success", nil, 1, endSucceeded, true},
		{"permanent", sqsworker.Permanent("Bad", failed), 1, endDead, true},
		{"cancelled", sqsworker.Cancelled(failed), 1, endDead, true},
		{"retry", failed, 4, "", false},
		{"retry at the last receive", failed, 5, endDead, true},
		{"retry-after at the last receive", sqsworker.RetryAfter(time.Second, failed), 5, endDead, true},
		{"defer", sqsworker.Defer(time.Second, "Busy"), 2, "", false},
		{"defer at the last receive", sqsworker.Defer(time.Second, "Busy"), 5, endDead, true},
		{"shutdown", context.Canceled, 2, "", false},
	} {
		got, final := ending(MiddlewareConfig{MaxReceiveCount: 5}, &sqsworker.Message{ReceiveCount: tc.receive}, tc.err)
		assert.Equal(t, tc.final, final, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, final := ending(MiddlewareConfig{}, &sqsworker.Message{ReceiveCount: 50}, failed)
	assert.False(t, final, "without MaxReceiveCount a retry never ends the job")
}
