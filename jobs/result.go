package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

var (
	// ErrNoResult matches the error of [Store.Result] for a job whose record holds no
	// result (none set, or the job has not ended).
	ErrNoResult = errors.New("jobs: the job has no result")
	// ErrLargeResultsOff matches the error of [Store.Result] for a record that refers to
	// a result in S3 when the Store has no Config.LargeResults: it reads no object.
	ErrLargeResultsOff = errors.New("jobs: the result is in S3 but Config.LargeResults is not set")
	// ErrResultRefNotAllowed matches the error of [Store.Result] for a reference that is
	// not one [SetResult] writes for this job inside Config.LargeResults.Location:
	// another bucket, a key outside the prefix or not the job's own (prefix + job id +
	// "/" + the digest), a malformed digest, a size outside 1..MaxLargeResultBytes. A
	// record changed by hand or by another writer; nothing is read.
	ErrResultRefNotAllowed = errors.New("jobs: the result reference is outside the configured location")
	// ErrResultMismatch matches the error of [Store.Result] for an object that is not the
	// document its reference names: another size or SHA-256, or not JSON (it was
	// overwritten). At most Size+1 bytes are read.
	ErrResultMismatch = errors.New("jobs: the result object does not match its reference")
)

// Result returns job id's whole result: the document of its record, or, for a result
// kept in S3 ([LargeResults]), the object the reference names (one GetObject, checked
// against the reference's size and SHA-256). It reads the record with [Store.Get] and
// then calls [Store.ResolveResult]. Errors: Get's, [ErrNoResult], and ResolveResult's.
func (s *Store) Result(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.ResolveResult(ctx, r)
}

// ResolveResult returns the whole result of r, a record [Store.Get] returned: r.Result,
// or the object r.ResultRef names, read only when it lies inside
// Config.LargeResults.Location at the key [SetResult] gives job r.ID. Errors:
// [ErrNoResult], [ErrLargeResultsOff], [ErrResultRefNotAllowed], [ErrResultMismatch],
// and GetObject's (wrapped).
func (s *Store) ResolveResult(ctx context.Context, r Record) (json.RawMessage, error) {
	if r.ResultRef == nil {
		if len(r.Result) == 0 {
			return nil, fmt.Errorf("%w: job %s (%s)", ErrNoResult, r.ID, r.State)
		}
		return r.Result, nil
	}
	ref := *r.ResultRef
	large := s.config.LargeResults
	if large == nil {
		return nil, fmt.Errorf("%w: job %s's result is %s", ErrLargeResultsOff, r.ID, ref)
	}
	if err := s.allowed(r.ID, ref); err != nil {
		return nil, fmt.Errorf("%w: job %s's result %s: %w", ErrResultRefNotAllowed, r.ID, ref, err)
	}
	output, err := large.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(ref.Bucket), Key: aws.String(ref.Key)})
	if err != nil {
		return nil, fmt.Errorf("jobs: reading job %s's result %s: %w", r.ID, ref, err)
	}
	defer output.Body.Close()
	if length := output.ContentLength; length != nil && *length != ref.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes (Content-Length), the reference says %d; not read", ErrResultMismatch, ref, *length, ref.Size)
	}
	var buffer bytes.Buffer
	buffer.Grow(int(ref.Size))
	if _, err := io.Copy(&buffer, io.LimitReader(output.Body, ref.Size+1)); err != nil {
		return nil, fmt.Errorf("jobs: reading job %s's result %s: %w", r.ID, ref, err)
	}
	document := buffer.Bytes()
	sum := sha256.Sum256(document)
	switch {
	case int64(len(document)) != ref.Size:
		return nil, fmt.Errorf("%w: %s holds %s bytes, the reference says %d", ErrResultMismatch, ref, countRead(int64(len(document)), ref.Size), ref.Size)
	case hex.EncodeToString(sum[:]) != ref.SHA256:
		return nil, fmt.Errorf("%w: %s has another SHA-256 than the reference's %s", ErrResultMismatch, ref, ref.SHA256)
	case !json.Valid(document):
		return nil, fmt.Errorf("%w: %s is not a JSON document", ErrResultMismatch, ref)
	}
	return document, nil
}

// allowed checks that ref is the one SetResult writes for job id.
func (s *Store) allowed(id string, ref ResultRef) error {
	location := s.config.LargeResults.Location
	if err := location.Check(ref.Bucket, ref.Key); err != nil {
		return err
	}
	if len(ref.SHA256) != 2*sha256.Size || strings.Trim(ref.SHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("the digest %q is not a lowercase hex SHA-256", ref.SHA256)
	}
	if ref.Size < 1 || ref.Size > MaxLargeResultBytes {
		return fmt.Errorf("the size %d is outside 1..%d", ref.Size, MaxLargeResultBytes)
	}
	want, err := resultObjectKey(location.KeyPrefix, id, ref.SHA256)
	if err != nil {
		return err
	}
	if ref.Key != want {
		return fmt.Errorf("the key is not the job's own %q", want)
	}
	return nil
}

// countRead describes n bytes read of an object announced as size: "more than size"
// when the read stopped at the limit.
func countRead(n, size int64) string {
	if n > size {
		return fmt.Sprintf("more than %d", size)
	}
	return fmt.Sprint(n)
}
