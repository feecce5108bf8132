package producer

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"
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

// DerivedJobID returns the job id of the job named name at t, the same for the same
// pair: a ULID whose time is t (to the millisecond) and whose random part is the first
// 80 bits of name's SHA-256. A sender that may send one job more than once (the
// scheduler's tick, sent again after a failed send) gives each send that id (Job.ID), so
// the copies share one job record and sort by t among ids made by [NewJobID].
func DerivedJobID(t time.Time, name string) string {
	sum := sha256.Sum256([]byte(name))
	return ulid.MustNew(ulid.Timestamp(t), bytes.NewReader(sum[:10])).String()
}

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
