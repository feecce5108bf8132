package claimcheck

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// S3's limits on keys.
const (
	// maxKeyLength is S3's limit of an object key, in bytes.
	maxKeyLength = 1024
	// derivedKeyLength is the length of the key part derived from the idempotency key and
	// the body (hex SHA-256); a random part (crypto/rand.Text) is shorter.
	derivedKeyLength = 64
)

// Errors [Store.Offload] returns for a message it cannot offload. Each is wrapped with the
// message's figures; match them with errors.Is.
var (
	// ErrReservedAttribute: the message already carries AttributePayloadSize,
	// LegacyAttributePayloadSize or AttributePayloadShared, which only the store may set.
	ErrReservedAttribute = errors.New("claimcheck: the message attribute is reserved for the S3 pointer")
	// ErrTooManyAttributes: the message has too many message attributes to add the
	// pointer's (AttributePayloadSize, and AttributePayloadShared for a shared pointer)
	// within SQS's limit of 10.
	ErrTooManyAttributes = errors.New("claimcheck: too many message attributes to add the S3 pointer's (SQS allows 10)")
	// ErrPointerTooLarge: even with its body in S3, the message (pointer plus message
	// attributes) exceeds SQS's 1 MiB.
	ErrPointerTooLarge = errors.New("claimcheck: the message attributes alone exceed SQS's maximum message size")
)

// S3API is the part of the S3 client the package uses: PutObject (the store),
// GetObject (the resolver) and DeleteObject (the cleaner). *s3.Client satisfies it.
type S3API interface {
	PutObject(ctx context.Context, input *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, input *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, input *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// Config configures a [Store].
type Config struct {
	// Bucket is the S3 bucket the payloads are written to. Required. The producer needs
	// s3:PutObject on it; consumers need s3:GetObject and s3:DeleteObject, and
	// s3:ListBucket so that a missing object is reported as NoSuchKey (S3 answers
	// AccessDenied without it).
	Bucket string

	// KeyPrefix is put before every object key (for example "payloads/"), so a lifecycle
	// rule can expire orphans by prefix and IAM policies can be scoped to it. At most 960
	// bytes (S3 keys are at most 1,024 bytes; the store adds up to 64 characters), of
	// S3's safe key characters (letters, digits, ! - _ . * ' ( ) /), without empty, "."
	// or ".." segments: the keys a [Resolver] accepts.
	KeyPrefix string

	// Shared marks every pointer the store writes as read by several consumers
	// (AttributePayloadShared), so that no consumer's [Cleaner] deletes its object and
	// the bucket's lifecycle rule expires it instead. Offload marks a message for an SNS
	// topic (its destination is a topic ARN) shared whatever this says; set Shared for
	// other fan-outs (EventBridge, a message copied to several queues). A shared pointer
	// uses two of SQS's 10 message attributes.
	Shared bool

	// Threshold is the message size, in bytes, above which Offload moves the body to S3:
	// body plus every message attribute's name, data type and value, as SQS counts a
	// message against MaximumMessageSize. If zero, Offload moves every body it is given:
	// the producer calls it only for messages above its own offload threshold (which
	// defaults to the queue's MaximumMessageSize), so the decision is taken once, there.
	// Set it when calling Offload directly. At most 1 MiB.
	Threshold int
}

// Store is the producer side of the claim check: it moves message bodies above a
// threshold to S3 and sends a pointer in their place, in the AWS extended client
// libraries' format, so Java and Python consumers of those libraries read our messages
// and [Middleware] reads theirs. It is safe for concurrent use.
type Store struct {
	client S3API
	config Config
}

// NewStore returns a store writing to config.Bucket with client.
//
// Errors: nil client, empty Bucket, a Threshold outside 0..1 MiB, or a KeyPrefix too
// long for S3.
func NewStore(client S3API, config Config) (*Store, error) {
	var problems []error
	if client == nil {
		problems = append(problems, errors.New("claimcheck: NewStore: nil S3 client"))
	}
	if config.Bucket == "" {
		problems = append(problems, errors.New("claimcheck: Config.Bucket is empty"))
	}
	if config.Threshold < 0 || config.Threshold > sqsinfo.MaxMessageBytes {
		problems = append(problems, fmt.Errorf("claimcheck: Config.Threshold %d is outside 0..%d (SQS's largest MaximumMessageSize)", config.Threshold, sqsinfo.MaxMessageBytes))
	}
	if len(config.KeyPrefix) > maxKeyLength-derivedKeyLength {
		problems = append(problems, fmt.Errorf("claimcheck: Config.KeyPrefix is %d bytes; at most %d leave room for the key's own part in S3's %d", len(config.KeyPrefix), maxKeyLength-derivedKeyLength, maxKeyLength))
	} else if config.KeyPrefix != "" {
		if err := checkKeyText(config.KeyPrefix); err != nil {
			problems = append(problems, fmt.Errorf("claimcheck: Config.KeyPrefix: %w", err))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return &Store{client: client, config: config}, nil
}

// Location returns where the store writes payloads: its bucket and key prefix, the
// entry for [ResolverConfig.Allow].
func (s *Store) Location() Location {
	return Location{Bucket: s.config.Bucket, KeyPrefix: s.config.KeyPrefix}
}

// Offload returns body and attributes unchanged when the message is not above
// Config.Threshold (never, when it is zero). Otherwise it writes body to S3 (PutObject to
// Config.Bucket) and returns the pointer body and a copy of attributes with
// AttributePayloadSize (Number: the body's size in bytes) added; attributes itself is
// never modified. It implements the producer's PayloadStore.
//
// The object key is KeyPrefix followed by the hex SHA-256 of the message's idempotency
// key ([sqsworker.AttributeIdempotencyKey]) and body when the message has one, and by
// a random part otherwise. So the sends of one job (a producer's retry, a re-send with
// the same idempotency key) carry the same pointer and share one object: the
// idempotency middleware's payload hash matches across them, and a retried Offload
// leaves no orphan. Jobs without an idempotency key never share an object.
//
// If the send that follows fails for good, the object stays in S3 (an orphan): expire
// the prefix with a lifecycle rule (see the package documentation).
//
// queueURL is the destination: a queue URL, or an SNS topic ARN when the caller
// publishes the result to a topic (sns:Publish with the same message attributes and
// raw message delivery to the subscribed queues), which marks the pointer shared (see
// Config.Shared).
//
// Errors: [ErrReservedAttribute], [ErrTooManyAttributes], [ErrPointerTooLarge] (checked
// against SQS's 1 MiB; the producer checks the queue's own MaximumMessageSize), and
// PutObject's error.
func (s *Store) Offload(ctx context.Context, queueURL string, body string, attributes map[string]types.MessageAttributeValue) (string, map[string]types.MessageAttributeValue, error) {
	if s.config.Threshold > 0 && messageSize(body, attributes) <= s.config.Threshold {
		return body, attributes, nil
	}
	for _, name := range []string{AttributePayloadSize, LegacyAttributePayloadSize, AttributePayloadShared} {
		if _, ok := attributes[name]; ok {
			return "", nil, fmt.Errorf("%w: %s", ErrReservedAttribute, name)
		}
	}
	shared := s.config.Shared || isTopicARN(queueURL)
	added := 1
	if shared {
		added = 2
	}
	if len(attributes)+added > sqsinfo.MaxMessageAttributes {
		return "", nil, fmt.Errorf("%w: the message has %d and the pointer adds %d", ErrTooManyAttributes, len(attributes), added)
	}
	pointer := Pointer{Bucket: s.config.Bucket, Key: s.config.KeyPrefix + objectName(body, attributes)}
	offloaded := make(map[string]types.MessageAttributeValue, len(attributes)+added)
	for name, value := range attributes {
		offloaded[name] = value
	}
	offloaded[AttributePayloadSize] = types.MessageAttributeValue{
		DataType:    aws.String("Number"),
		StringValue: aws.String(strconv.Itoa(len(body))),
	}
	if shared {
		offloaded[AttributePayloadShared] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("1")}
	}
	pointerBody := pointer.Body()
	if pointerSize := messageSize(pointerBody, offloaded); pointerSize > sqsinfo.MaxMessageBytes {
		return "", nil, fmt.Errorf("%w: %d bytes with the pointer, limit %d", ErrPointerTooLarge, pointerSize, sqsinfo.MaxMessageBytes)
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(pointer.Bucket),
		Key:           aws.String(pointer.Key),
		Body:          strings.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	})
	if err != nil {
		return "", nil, fmt.Errorf("claimcheck: storing the %d-byte body in %s: %w", len(body), pointer, err)
	}
	return pointerBody, offloaded, nil
}

// isTopicARN reports whether destination is an SNS topic's ARN.
func isTopicARN(destination string) bool {
	parsed, err := arn.Parse(destination)
	return err == nil && parsed.Service == "sns"
}

// objectName is the key's own part: derived from the idempotency key and the body, or
// random without an idempotency key.
func objectName(body string, attributes map[string]types.MessageAttributeValue) string {
	key := aws.ToString(attributes[sqsworker.AttributeIdempotencyKey].StringValue)
	if key == "" {
		return rand.Text()
	}
	digest := sha256.New()
	digest.Write([]byte(key))
	digest.Write([]byte{0})
	digest.Write([]byte(body))
	return hex.EncodeToString(digest.Sum(nil))
}

// messageSize is the message's size as SQS counts it against MaximumMessageSize.
func messageSize(body string, attributes map[string]types.MessageAttributeValue) int {
	return len(body) + sqsx.SDKAttributesSize(attributes)
}
