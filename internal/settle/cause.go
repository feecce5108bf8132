package settle

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Failure causes logged with a failed attempt (the "cause" attribute).
const (
	// causeClientRetryQuota: an AWS SDK client in the handler ran out of its client-side
	// retry quota (ratelimit.QuotaExceededError, "retry quota exceeded"). The service
	// did not throttle this call; the client's token bucket, shared by all its calls,
	// was drained by earlier retries. The attempt is retried with Backoff like any
	// transient error.
	causeClientRetryQuota = "client_retry_quota"
	// causeThrottledByService: the service answered a throttling error (for example
	// ThrottlingException, ProvisionedThroughputExceededException).
	causeThrottledByService = "throttled_by_service"
)

// failureCause names the kind of a transient AWS failure in err, or "".
func failureCause(err error) string {
	if _, ok := errors.AsType[ratelimit.QuotaExceededError](err); ok {
		return causeClientRetryQuota
	}
	if (retry.ThrottleErrorCode{Codes: retry.DefaultThrottleErrorCodes}).IsErrorThrottle(err) == aws.TrueTernary {
		return causeThrottledByService
	}
	return ""
}
