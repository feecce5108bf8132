package producer

import (
	"fmt"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// MaxJobIDBytes bounds a job id chosen by the sender (Job.ID): it is a message attribute
// value and the last part of its job record's key in the shared table. A ULID is 26.
const MaxJobIDBytes = 128

// NewJobID returns a new job id: a ULID (26 characters of Crockford base32, its first
// ten the time in milliseconds), so ids sort by the time they were made, and ids made
// in the same millisecond by one process sort in the order they were made.
// [Prepare] calls it for every job whose ID is empty.
func NewJobID() string { return ulid.Make().String() }

// jobID returns the job's id: job.ID when set, a new one otherwise. A chosen id must be
// valid UTF-8 of 1 to MaxJobIDBytes bytes.
func jobID(job Job) (string, error) {
	if job.ID == "" {
		return NewJobID(), nil
	}
	if len(job.ID) > MaxJobIDBytes || !utf8.ValidString(job.ID) {
		return "", fmt.Errorf("producer: Job.ID (%d bytes) must be valid UTF-8 of at most %d bytes", len(job.ID), MaxJobIDBytes)
	}
	return job.ID, nil
}
