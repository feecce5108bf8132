package poller

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SDK retries of the calls that keep or settle held messages (see withoutRetryQuota).
const (
	// settleCallAttempts is the most HTTP attempts of one such call.
	settleCallAttempts = 3
	// minRetryDelay is the shortest pause before a retry of such a call, by the SDK or
	// by the runtime (deletes, heartbeats); maxRetryDelay the longest.
	minRetryDelay = 200 * time.Millisecond
	maxRetryDelay = 2 * time.Second
)

// withoutRetryQuota is the per-call option of DeleteMessageBatch and
// ChangeMessageVisibility(Batch) (heartbeats, releases, reschedules). It replaces the
// client's retryer, for these calls only, with a standard retryer without the client-side
// retry quota (ratelimit.None): the SDK's default token bucket is shared by every call of
// the client, and once a burst of throttles or 5xx answers has drained it, every further
// retryable failure fails at once with ratelimit.QuotaExceededError ("retry quota
// exceeded"), so heartbeats and deletes would fail fast exactly when they matter (a
// message returning while it runs, or after it was handled;
// https://github.com/aws/aws-sdk-go-v2/issues/1665). Instead the number of attempts is
// bounded (3) and each retry waits a jittered 200 ms to 2 s (retryDelay).
func withoutRetryQuota(options *sqs.Options) {
	options.Retryer = settleRetryer()
}

// settleRetryer is the retryer withoutRetryQuota installs.
func settleRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = settleCallAttempts
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return retryDelay(attempt), nil
		})
	})
}

// retryDelay is the pause before retry number attempt (1, 2, ...) of a call that keeps or
// settles messages: 200 ms doubling per attempt, plus up to half of it again at random
// (so workers that failed together do not retry together), at most 2 s.
func retryDelay(attempt int) time.Duration {
	base := minRetryDelay << min(max(attempt-1, 0), 4)
	return min(base+rand.N(base/2+1), maxRetryDelay)
}

// stopRetrying wraps the client's retryer for ReceiveMessage: once stopping is closed
// no failed attempt is retried, so no new long poll starts after a shutdown began.
type stopRetrying struct {
	aws.RetryerV2
	stopping <-chan struct{}
}

func (r *stopRetrying) IsErrorRetryable(err error) bool {
	select {
	case <-r.stopping:
		return false
	default:
		return r.RetryerV2.IsErrorRetryable(err)
	}
}

// asRetryerV2 returns retryer as an aws.RetryerV2, adapting an older aws.Retryer.
func asRetryerV2(retryer aws.Retryer) aws.RetryerV2 {
	if v2, ok := retryer.(aws.RetryerV2); ok {
		return v2
	}
	return retryerV1{retryer}
}

type retryerV1 struct{ aws.Retryer }

func (r retryerV1) GetAttemptToken(context.Context) (func(error) error, error) {
	return r.GetInitialToken(), nil
}
