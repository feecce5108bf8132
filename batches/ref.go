package batches

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Message attributes of batch jobs and callbacks.
const (
	// AttributeBatch is the String message attribute [Batch.Add] gives every job of a
	// batch: "<batch id>:<token>:<shards>", the batch id a ULID, the token 32 lowercase
	// hex digits (the batch's random secret, which every counter shard holds and every
	// count is conditioned on), shards the number of counter shards (1 to [MaxShards]).
	// It uses one of the 10 attributes SQS allows a message.
	AttributeBatch = "batch"
	// AttributeBatchCallback is the String message attribute of a batch's callback job:
	// "<batch id>:success" or "<batch id>:complete". Read it with [CallbackOf].
	AttributeBatchCallback = "batch-callback"
)

// MaxShards bounds the counter shards of a batch (Config.Shards): [Batches.Open] writes
// the batch item and its shards in one TransactWriteItems (DynamoDB's limit is 100
// actions).
const MaxShards = 64

// ErrInvalidAttribute matches the error for a batch attribute that is not one
// [Batch.Add] writes. The middleware fails such a message permanently (reason
// "BatchAttributeInvalid") without running its handler: the attribute chooses table
// items, so nothing else is accepted.
var ErrInvalidAttribute = errors.New("batches: invalid batch attribute")

// ref is what a batch job's attribute says: which batch, its token, its shard count.
type ref struct {
	id     string
	token  string
	shards int
}

func (r ref) String() string { return r.id + ":" + r.token + ":" + strconv.Itoa(r.shards) }

// parseRef parses an [AttributeBatch] value, accepting only what [Batch.Add] writes.
func parseRef(value string) (ref, error) {
	parts := strings.Split(value, ":")
	if len(parts) != 3 {
		return ref{}, fmt.Errorf("%w: %q is not <batch id>:<token>:<shards>", ErrInvalidAttribute, truncate(value))
	}
	if err := validID(parts[0]); err != nil {
		return ref{}, err
	}
	if len(parts[1]) != 32 || strings.Trim(parts[1], "0123456789abcdef") != "" {
		return ref{}, fmt.Errorf("%w: the token is not 32 lowercase hex digits", ErrInvalidAttribute)
	}
	shards, err := strconv.Atoi(parts[2])
	if err != nil || shards < 1 || shards > MaxShards || strconv.Itoa(shards) != parts[2] {
		return ref{}, fmt.Errorf("%w: shards %q is not 1 to %d", ErrInvalidAttribute, truncate(parts[2]), MaxShards)
	}
	return ref{id: parts[0], token: parts[1], shards: shards}, nil
}

// validID accepts a batch id: a ULID in its canonical form (26 characters of Crockford
// base32, upper case), so an id never contains "#" and names one batch's items only.
func validID(id string) error {
	parsed, err := ulid.ParseStrict(id)
	if err != nil || parsed.String() != id {
		return fmt.Errorf("%w: batch id %q is not a ULID in canonical form", ErrInvalidAttribute, truncate(id))
	}
	return nil
}

// shardOf is the counter shard of job id among shards: FNV-1a of the id, modulo shards.
// [Batch.Add] and the middleware both call it, so a job's end decrements the shard its
// Add raised.
func shardOf(jobID string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(jobID))
	return int(h.Sum32() % uint32(shards))
}

// ulidAt returns a new ULID whose time is now.
func ulidAt(now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
