package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker"
)

// missingError is a GetObject that found no object (key true: NoSuchKey) or no bucket.
type missingError struct {
	pointer Pointer
	key     bool
	err     error
}

func (e *missingError) Error() string {
	what := "bucket"
	if e.key {
		what = "object"
	}
	return fmt.Sprintf("claimcheck: payload %s not found (no such %s): %v", e.pointer, what, e.err)
}

func (e *missingError) Unwrap() error { return e.err }

// fetch reads the payload pointer refers to, which the message announces as size bytes
// (at most limit): it refuses an object whose Content-Length is above limit or is not
// size, and reads at most size+1 bytes, so a size that lies costs no more memory than
// the one announced.
func fetch(ctx context.Context, client S3API, pointer Pointer, size, limit int64) (string, error) {
	output, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(pointer.Bucket), Key: aws.String(pointer.Key)})
	if err != nil {
		if key, ok := notFound(err); ok {
			return "", &missingError{pointer: pointer, key: key, err: err}
		}
		return "", fmt.Errorf("claimcheck: reading payload %s: %w", pointer, err)
	}
	defer output.Body.Close()
	if length := output.ContentLength; length != nil {
		switch {
		case *length > limit:
			return "", sqsworker.Permanent(ReasonPayloadTooLarge, fmt.Errorf("claimcheck: payload %s is %d bytes (Content-Length), above the limit of %d; not read", pointer, *length, limit))
		case *length != size:
			return "", sqsworker.Permanent(ReasonPayloadSizeMismatch, fmt.Errorf("claimcheck: payload %s is %d bytes (Content-Length), but the message announces %d; not read", pointer, *length, size))
		}
	}
	var payload strings.Builder
	payload.Grow(int(size))
	n, err := io.Copy(&payload, io.LimitReader(output.Body, size+1))
	if err != nil {
		return "", fmt.Errorf("claimcheck: reading payload %s: %w", pointer, err)
	}
	if n != size {
		return "", sqsworker.Permanent(ReasonPayloadSizeMismatch, fmt.Errorf("claimcheck: payload %s holds %s bytes, but the message announces %d", pointer, countRead(n, size), size))
	}
	return payload.String(), nil
}

// countRead describes n bytes read of a payload announced as size: "more than size"
// when the read stopped at the limit.
func countRead(n, size int64) string {
	if n > size {
		return fmt.Sprintf("more than %d", size)
	}
	return fmt.Sprint(n)
}

// notFound reports whether err says the object (key true) or its bucket does not exist.
func notFound(err error) (key bool, ok bool) {
	var noKey *s3types.NoSuchKey
	var noBucket *s3types.NoSuchBucket
	switch {
	case errors.As(err, &noKey):
		return true, true
	case errors.As(err, &noBucket):
		return false, true
	}
	var apiError smithy.APIError
	if errors.As(err, &apiError) {
		switch apiError.ErrorCode() {
		case "NoSuchKey":
			return true, true
		case "NoSuchBucket":
			return false, true
		}
	}
	return false, false
}
