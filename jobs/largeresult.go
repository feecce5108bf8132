package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sqsworker/sqsworker/claimcheck"
)

// Bounds of a result kept in S3 ([LargeResults]).
const (
	// MaxLargeResultBytes bounds a result kept in S3: 16 MiB, the claim-check
	// resolver's default payload bound. [SetResult] refuses a larger one with
	// [ErrResultTooLarge], and [Store.Result] refuses to read a reference announcing
	// more. The whole document is held in memory by the handler and by the reader.
	MaxLargeResultBytes = 16 << 20
	// MaxResultJobIDBytes bounds the job id of a job whose result goes to S3: the id
	// becomes a segment of the object key.
	MaxResultJobIDBytes = 128
)

// resultKeyRoom is what the key adds to Location.KeyPrefix: the job id, "/" and the hex
// SHA-256 of the document.
const resultKeyRoom = MaxResultJobIDBytes + 1 + 2*sha256.Size

// maxKeyBytes is S3's limit of an object key.
const maxKeyBytes = 1024

var (
	// ErrResultJobID matches the error of [SetResult] for a large result of a job whose
	// id cannot name an S3 object: empty, longer than MaxResultJobIDBytes, "." or "..",
	// or holding a byte other than a letter, a digit, "-", "_" or ".". The id comes
	// from the message, so it is never trusted to pick a key (a "/" or ".." would leave
	// the job's place under the prefix). Nothing is written.
	ErrResultJobID = errors.New("jobs: the job id cannot name the result's S3 object")
	// ErrReservedResult matches the error of [SetResult] for a result that has the form
	// of the reference it keeps in the idempotency record for a result in S3
	// ({"sqsworker_result_ref": ...}): it would be read back as a reference.
	ErrReservedResult = errors.New("jobs: the result has the form reserved for a reference to a result in S3")
)

// S3API is the part of the S3 client that large results use: PutObject ([SetResult])
// and GetObject ([Store.Result]). *s3.Client satisfies it.
type S3API interface {
	PutObject(ctx context.Context, input *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, input *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// LargeResults keeps results over MaxResultBytes (up to MaxLargeResultBytes) in S3,
// in the manner of the claim check: the document is an object, the record holds a
// reference ([ResultRef]). Set it as Config.LargeResults; without it such a result is
// refused with [ErrResultTooLarge].
//
// The object key is Location.KeyPrefix + job id + "/" + the hex SHA-256 of the
// document, so a job's results stay under its own name, and the key depends on nothing
// else a message carries. Package jobs never deletes these objects: expire the prefix
// with an S3 lifecycle rule no shorter than Config.TTL (a record may refer to its
// object until it expires), which also removes the objects of earlier attempts and of
// cancelled jobs.
//
// Cost: one PutObject per call of [SetResult] with a large result (within the
// handler's context), one GetObject per read with [Store.Result]; the record's writes
// are unchanged. The IAM policy of claimcheck.Location applies: s3:PutObject on
// arn:aws:s3:::BUCKET/PREFIX* for the workers, s3:GetObject on it for the readers.
type LargeResults struct {
	// Client is the S3 client. Required.
	Client S3API
	// Location is the bucket and key prefix of the objects (claimcheck's allow-list
	// entry). Its bucket is required; end the prefix with "/" ("job-results/"). The
	// prefix is at most 1,024 - MaxResultJobIDBytes - 65 bytes (S3's key limit, less the
	// job id, "/" and the digest). [Store.Result] reads only objects inside it.
	Location claimcheck.Location
}

// validate checks the configuration.
func (l *LargeResults) validate() error {
	if l.Client == nil {
		return errors.New("jobs: Config.LargeResults.Client is nil")
	}
	if err := l.Location.Validate(); err != nil {
		return fmt.Errorf("jobs: Config.LargeResults.Location: %w", err)
	}
	if n := len(l.Location.KeyPrefix); n > maxKeyBytes-resultKeyRoom {
		return fmt.Errorf("jobs: Config.LargeResults.Location.KeyPrefix is %d bytes; at most %d leave room for the job id and digest in S3's %d", n, maxKeyBytes-resultKeyRoom, maxKeyBytes)
	}
	return nil
}

// ResultRef refers to a job's result kept in S3 ([LargeResults]).
type ResultRef struct {
	// Bucket and Key name the object.
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// Size is the document's size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the document's SHA-256, in lowercase hex (also the key's last segment).
	SHA256 string `json:"sha256"`
}

// String returns "s3://BUCKET/KEY".
func (r ResultRef) String() string { return "s3://" + r.Bucket + "/" + r.Key }

// refMarker is the only field of the reference document kept in the idempotency record.
const refMarker = "sqsworker_result_ref"

// refDocument is the reference as the idempotency record keeps it in place of the
// result: {"sqsworker_result_ref": {"bucket": ..., "key": ..., "size": ..., "sha256": ...}}.
func (r ResultRef) refDocument() []byte {
	encoded, err := json.Marshal(map[string]ResultRef{refMarker: r})
	if err != nil {
		panic(fmt.Sprintf("jobs: encoding a result reference cannot fail: %v", err)) // strings and a number
	}
	return encoded
}

// ParseResultRef reports whether document is the reference [SetResult] keeps in the
// idempotency record (idempotency.Record.Result, which a duplicate's
// Config.OnCompletedDuplicate receives) in place of a result kept in S3, and returns
// it. Read the result itself with [Store.Result].
func ParseResultRef(document []byte) (ResultRef, bool) {
	if !bytes.HasPrefix(bytes.TrimLeft(document, " \t\r\n"), []byte(`{"`+refMarker+`"`)) {
		return ResultRef{}, false
	}
	var wrapper map[string]ResultRef
	decoder := json.NewDecoder(bytes.NewReader(document))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&wrapper); err != nil || len(wrapper) != 1 {
		return ResultRef{}, false
	}
	r, ok := wrapper[refMarker]
	return r, ok
}

// resultObjectKey returns the key of job id's result of the given digest, or an error
// wrapping ErrResultJobID for an id that cannot be a key segment.
func resultObjectKey(prefix, id, digest string) (string, error) {
	switch {
	case id == "":
		return "", fmt.Errorf("%w: the id is empty", ErrResultJobID)
	case len(id) > MaxResultJobIDBytes:
		return "", fmt.Errorf("%w: the id is %d bytes, at most %d", ErrResultJobID, len(id), MaxResultJobIDBytes)
	case id == "." || id == "..":
		return "", fmt.Errorf("%w: %q is a path segment", ErrResultJobID, id)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.') {
			return "", fmt.Errorf("%w: %q has the byte %q at %d (letters, digits, - _ . only)", ErrResultJobID, id, b, i)
		}
	}
	return prefix + id + "/" + digest, nil
}

// putResult writes document, a large result of job id, to S3 (one PutObject) and
// returns its reference.
func (s *Store) putResult(ctx context.Context, id string, document []byte) (ResultRef, error) {
	large := s.config.LargeResults
	sum := sha256.Sum256(document)
	digest := hex.EncodeToString(sum[:])
	k, err := resultObjectKey(large.Location.KeyPrefix, id, digest)
	if err != nil {
		return ResultRef{}, err
	}
	ref := ResultRef{Bucket: large.Location.Bucket, Key: k, Size: int64(len(document)), SHA256: digest}
	_, err = large.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(ref.Bucket),
		Key:           aws.String(ref.Key),
		Body:          bytes.NewReader(document),
		ContentLength: aws.Int64(ref.Size),
		ContentType:   aws.String("application/json"),
	})
	if err != nil {
		return ResultRef{}, fmt.Errorf("jobs: storing job %s's %d-byte result in %s: %w", id, len(document), ref, err)
	}
	return ref, nil
}
