package lambda

import (
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsworker/sqsworker"
)

// DefaultInfrastructureFaultThreshold is how many records in a row must fail with the
// same infrastructure fault before the invocation fails as a whole, when
// WithInfrastructureFaultThreshold is not given.
const DefaultInfrastructureFaultThreshold = 2

// infrastructureCodes are AWS error codes that name a fault of a dependency or of the
// function's own setup (permissions, credentials, a missing table, throttling, the
// service failing), never of one record: every record after it would meet it too.
var infrastructureCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true,
	"UnrecognizedClientException": true, "InvalidClientTokenId": true,
	"ExpiredToken": true, "ExpiredTokenException": true,
	"InvalidSignatureException": true, "SignatureDoesNotMatch": true,
	"ResourceNotFoundException": true, // DynamoDB: the table does not exist
	"KMSAccessDeniedException":  true, "KMSDisabledException": true, "KMSNotFoundException": true,
	"InternalError": true, "InternalFailure": true, "InternalServerError": true,
	"ServiceUnavailable": true, "ServiceUnavailableException": true,
}

// infrastructureFault returns the signature of err when it is an infrastructure fault:
// a failure of an AWS SDK call (smithy.OperationError) that no record causes, so the
// next record would fail the same way: an error code of infrastructureCodes, a
// throttling error, an HTTP status of 403, 429 or 5xx, or a request that could not be
// sent (connection refused, DNS). The signature names the service, the operation and the
// code ("DynamoDB PutItem AccessDeniedException"), never the record (keys, request ids),
// so two records meeting the same fault give the same signature. Record faults (a
// conditional check, a validation error, a missing S3 object), errors of other kinds and
// the outcomes Classify does not retry are not infrastructure faults.
func infrastructureFault(err error) (string, bool) {
	if err == nil || sqsworker.Classify(err).Kind != sqsworker.OutcomeRetry || sqsworker.IsPanicError(err) {
		return "", false
	}
	operation, ok := errors.AsType[*smithy.OperationError](err)
	if !ok {
		return "", false
	}
	prefix := operation.Service() + " " + operation.Operation() + " "
	if _, ok := errors.AsType[*smithyhttp.RequestSendError](err); ok {
		return prefix + "request not sent", true
	}
	code := ""
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		code = apiErr.ErrorCode()
	}
	status := 0
	if response, ok := errors.AsType[*smithyhttp.ResponseError](err); ok {
		status = response.HTTPStatusCode()
	}
	throttled := (retry.ThrottleErrorCode{Codes: retry.DefaultThrottleErrorCodes}).IsErrorThrottle(err) == aws.TrueTernary
	if infrastructureCodes[code] || throttled || status == 403 || status == 429 || status >= 500 {
		if code == "" {
			code = "HTTP " + strconv.Itoa(status)
		}
		return prefix + code, true
	}
	return "", false
}

// faultStreak counts the records in a row, in the order they finished, that failed with
// one infrastructure fault. Guarded by the invocation's mutex.
type faultStreak struct {
	threshold int // 0: never trips
	signature string
	count     int
	// first is the error of the streak's first record, for the invocation error.
	first error
	// tripped is set when count reached threshold: no record starts any more.
	tripped bool
}

// record counts a finished record's error (nil for one that succeeded) and reports
// whether the streak tripped with it.
func (s *faultStreak) record(err error) bool {
	if s.threshold == 0 || s.tripped {
		return false
	}
	signature, ok := infrastructureFault(err)
	switch {
	case !ok:
		s.signature, s.count, s.first = "", 0, nil
		return false
	case signature != s.signature:
		s.signature, s.count, s.first = signature, 1, err
	default:
		s.count++
	}
	s.tripped = s.count >= s.threshold
	return s.tripped
}
