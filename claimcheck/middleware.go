package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsworker/sqsworker"
)

// Failure reasons the middleware gives to [sqsworker.Permanent]; they become the
// failure-reason attribute of the dead-lettered message.
const (
	// ReasonMalformedPointer: the message carries AttributePayloadSize (or the legacy
	// name) but its body is not an S3 pointer. Retrying cannot fix the body.
	ReasonMalformedPointer = "ClaimCheckMalformedPointer"
	// ReasonPayloadNotFound: S3 answered NoSuchKey or NoSuchBucket for the pointer. S3
	// is strongly consistent (a written object is readable at once), so a missing
	// object was deleted (by a lifecycle rule, by hand, or after a duplicate delivery of
	// the same message was handled) and will not come back on retry.
	ReasonPayloadNotFound = "ClaimCheckPayloadNotFound"
	// ReasonPayloadTooLarge: the object is larger than MiddlewareConfig.MaxPayloadSize.
	ReasonPayloadTooLarge = "ClaimCheckPayloadTooLarge"
)

// DefaultMaxPayloadSize is MiddlewareConfig.MaxPayloadSize when zero: 256 MiB.
const DefaultMaxPayloadSize = 256 << 20

// MiddlewareConfig configures [Middleware]. The zero value is usable.
type MiddlewareConfig struct {
	// MaxPayloadSize bounds the payload read from S3, in bytes, since the whole payload
	// is held in memory as the message body; a larger object fails the message with
	// ReasonPayloadTooLarge. If zero, DefaultMaxPayloadSize. (The extended client
	// libraries allow payloads up to 2 GB.)
	MaxPayloadSize int64

	// Cleaner, if set, is told of every delivery whose payload was handed to the
	// handler, so it can delete the payload once the host reports the message deleted
	// after success. Without it no payload is deleted (a lifecycle rule expires them).
	Cleaner *Cleaner
}

// Middleware returns a middleware that resolves S3 pointers before the handler runs, on
// either host: for a message that carries AttributePayloadSize (or
// LegacyAttributePayloadSize) it reads the payload from S3 (GetObject) and hands the
// handler the message with the payload as Body and without the size attribute, as the
// extended client libraries do. Other messages pass through unchanged.
//
// The handler gets a copy of the message; the host's message is left as received, so
// what the host does next keeps the pointer: a dead-letter send copies the pointer body
// and its attribute, and the dead-lettered (or redriven) message still resolves. The middleware never deletes the object; a [Cleaner] does, after the host
// confirmed the message's delete (set MiddlewareConfig.Cleaner).
//
// Failures: a malformed pointer ([ReasonMalformedPointer]), a missing object or bucket
// ([ReasonPayloadNotFound]) and an object above MaxPayloadSize ([ReasonPayloadTooLarge])
// are permanent, so the message goes to the dead-letter queue after one receive with the
// reason; any other S3 error (throttling, network, AccessDenied, which may be a policy
// being fixed) is an ordinary error, retried with backoff and bounded by the redrive
// policy.
//
// Order: put it inside middlewares that need only the pointer message, such as the
// idempotency middleware keyed by a message attribute, so a duplicate of a handled
// message is suppressed before its (possibly deleted) payload is read.
func Middleware(client S3API, config MiddlewareConfig) sqsworker.Middleware {
	if client == nil {
		panic("claimcheck: Middleware: nil S3 client")
	}
	if config.MaxPayloadSize <= 0 {
		config.MaxPayloadSize = DefaultMaxPayloadSize
	}
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			pointer, _, ok, err := PointerOf(message)
			if !ok {
				return next.Handle(ctx, message)
			}
			if err != nil {
				return sqsworker.Permanent(ReasonMalformedPointer, err)
			}
			payload, err := fetch(ctx, client, pointer, config.MaxPayloadSize)
			if err != nil {
				return err
			}
			// The handler gets a copy; the host's message keeps the pointer, and is
			// never written while other goroutines (heartbeats, observers) may read it.
			resolved := *message
			resolved.Body = payload
			resolved.MessageAttributes = maps.Clone(message.MessageAttributes)
			delete(resolved.MessageAttributes, AttributePayloadSize)
			delete(resolved.MessageAttributes, LegacyAttributePayloadSize)
			if config.Cleaner != nil {
				config.Cleaner.track(ctx, message, pointer)
			}
			return next.Handle(ctx, &resolved)
		})
	}
}

// fetch reads the payload pointer refers to, at most limit bytes.
func fetch(ctx context.Context, client S3API, pointer Pointer, limit int64) (string, error) {
	output, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(pointer.Bucket), Key: aws.String(pointer.Key)})
	if err != nil {
		if isNotFound(err) {
			return "", sqsworker.Permanent(ReasonPayloadNotFound, fmt.Errorf("claimcheck: payload %s not found: %w", pointer, err))
		}
		return "", fmt.Errorf("claimcheck: reading payload %s: %w", pointer, err)
	}
	defer output.Body.Close()
	if output.ContentLength != nil && *output.ContentLength > limit {
		return "", sqsworker.Permanent(ReasonPayloadTooLarge, fmt.Errorf("claimcheck: payload %s is %d bytes, above the limit of %d", pointer, *output.ContentLength, limit))
	}
	payload, err := io.ReadAll(io.LimitReader(output.Body, limit+1))
	if err != nil {
		return "", fmt.Errorf("claimcheck: reading payload %s: %w", pointer, err)
	}
	if int64(len(payload)) > limit {
		return "", sqsworker.Permanent(ReasonPayloadTooLarge, fmt.Errorf("claimcheck: payload %s is above the limit of %d bytes", pointer, limit))
	}
	return string(payload), nil
}

// isNotFound reports whether err says the object or its bucket does not exist.
func isNotFound(err error) bool {
	var noKey *s3types.NoSuchKey
	var noBucket *s3types.NoSuchBucket
	if errors.As(err, &noKey) || errors.As(err, &noBucket) {
		return true
	}
	var apiError smithy.APIError
	if errors.As(err, &apiError) && (apiError.ErrorCode() == "NoSuchKey" || apiError.ErrorCode() == "NoSuchBucket") {
		return true
	}
	var response *smithyhttp.ResponseError
	return errors.As(err, &response) && response.HTTPStatusCode() == http.StatusNotFound
}
