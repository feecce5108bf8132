package lambda

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsworker/sqsworker"
)

// sdkError is an error as the AWS SDK returns it for an answered call: an operation
// error around an HTTP response error around the API error.
func sdkError(service, operation string, status int, code string) error {
	return &smithy.OperationError{ServiceID: service, OperationName: operation, Err: &awshttp.ResponseError{
		RequestID: "req-1",
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "from the service"},
		},
	}}
}

func TestInfrastructureFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string // "" when not an infrastructure fault
	}{
		{"access denied, wrapped by a middleware", fmt.Errorf("idempotency: store put for key %q: %w", "r1", sdkError("DynamoDB", "PutItem", 400, "AccessDeniedException")), "DynamoDB PutItem AccessDeniedException"},
		{"missing table", sdkError("DynamoDB", "GetItem", 400, "ResourceNotFoundException"), "DynamoDB GetItem ResourceNotFoundException"},
		{"throttled", sdkError("DynamoDB", "PutItem", 400, "ProvisionedThroughputExceededException"), "DynamoDB PutItem ProvisionedThroughputExceededException"},
		{"5xx without a known code", sdkError("S3", "GetObject", 503, "SlowDown"), "S3 GetObject SlowDown"},
		{"request not sent", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: &smithyhttp.RequestSendError{Err: errors.New("dial tcp: connection refused")}}, "DynamoDB PutItem request not sent"},
		{"conditional check: the record's own", sdkError("DynamoDB", "PutItem", 400, "ConditionalCheckFailedException"), ""},
		{"validation: the record's own", sdkError("DynamoDB", "PutItem", 400, "ValidationException"), ""},
		{"missing S3 object: the record's own", sdkError("S3", "GetObject", 404, "NoSuchKey"), ""},
		{"a plain handler error", errors.New("downstream 503"), ""},
		{"permanent, even around an infrastructure error", sqsworker.Permanent("Bad", sdkError("DynamoDB", "PutItem", 400, "AccessDeniedException")), ""},
		{"nil", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := infrastructureFault(tc.err)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("infrastructureFault = %q, %t; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestFaultStreak: the streak trips at the threshold of consecutive records with the
// same fault; a success, another fault or a record fault starts it again; 0 never trips.
func TestFaultStreak(t *testing.T) {
	t.Parallel()
	denied := sdkError("DynamoDB", "PutItem", 400, "AccessDeniedException")
	throttled := sdkError("DynamoDB", "PutItem", 400, "ThrottlingException")
	tests := []struct {
		name      string
		threshold int
		errs      []error
		tripAt    int // index of the record that trips it; -1 never
	}{
		{"two in a row", 2, []error{denied, denied, denied}, 1},
		{"a success between", 2, []error{denied, nil, denied, denied}, 3},
		{"another fault between", 2, []error{denied, throttled, denied, denied}, 3},
		{"a record fault between", 2, []error{denied, errors.New("bad order"), denied}, -1},
		{"threshold 3", 3, []error{denied, denied, denied}, 2},
		{"off", 0, []error{denied, denied, denied}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := faultStreak{threshold: tc.threshold}
			trippedAt := -1
			for i, err := range tc.errs {
				if s.record(err) {
					trippedAt = i
				}
			}
			if trippedAt != tc.tripAt {
				t.Errorf("tripped at %d, want %d", trippedAt, tc.tripAt)
			}
			if tc.tripAt >= 0 && (s.first != denied || s.signature != "DynamoDB PutItem AccessDeniedException") {
				t.Errorf("streak %+v, want the first denied error and its signature", s)
			}
		})
	}
}
