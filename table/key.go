package table

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Namespace is the first part of every item's key: which user of the table owns the item.
type Namespace string

// The namespaces. No name contains [Separator], and each is reserved whether or not its
// feature exists yet: nothing else may write keys that start with it.
const (
	// Idempotency holds the idempotency middleware's records (package idempotency).
	Idempotency Namespace = "idempotency"
	// Unique holds the keys of unique jobs (package producer).
	Unique Namespace = "unique"
	// Scheduler holds the scheduler's leader lease and each schedule's state (package
	// scheduler).
	Scheduler Namespace = "scheduler"
	// Limits holds the fleet-wide concurrency permits and rate buckets (package
	// fleetlimit).
	Limits Namespace = "limit"
	// Batches holds job batches: each batch's item, its counter shards and one marker
	// per finished job (package batches).
	Batches Namespace = "batch"
	// JobRecords holds job records: state, attempts, result, progress and cancellation
	// (package jobs).
	JobRecords Namespace = "job"
	// Cancellation is reserved for job cancellation.
	Cancellation Namespace = "cancel"
)

// Separator ends a key's namespace and separates its parts.
const Separator = "#"

// namespaces lists every namespace; Key accepts no other.
var namespaces = []Namespace{Idempotency, Unique, Scheduler, Limits, Batches, JobRecords, Cancellation}

// Namespaces returns every namespace, reserved ones included.
func Namespaces() []Namespace { return slices.Clone(namespaces) }

// ErrInvalidKey matches the error [Key] and its layouts return for parts that cannot make
// a key.
var ErrInvalidKey = errors.New("table: invalid key")

// Key returns the key of an item of namespace ns with the given parts:
// ns + "#" + parts joined by "#". For example Key(Unique, "order-42") is
// "unique#order-42".
//
// Every part must be valid UTF-8; every part but the last must not contain "#" (it may
// be empty); the last may contain anything but must not be empty; the whole key must fit
// in [MaxKeyBytes]. The error otherwise matches [ErrInvalidKey], as it does for a
// namespace that is not one of [Namespaces].
//
// The namespace is therefore the text before the key's first "#" (see [NamespaceOf]), so
// keys of different namespaces never collide. Within a namespace, keys with the same
// number of parts are equal only when their parts are: each namespace's owner fixes its
// layouts (the functions below) so that number never varies for one kind of item.
func Key(ns Namespace, parts ...string) (string, error) {
	if !slices.Contains(namespaces, ns) {
		return "", fmt.Errorf("%w: unknown namespace %q", ErrInvalidKey, ns)
	}
	if len(parts) == 0 || parts[len(parts)-1] == "" {
		return "", fmt.Errorf("%w: namespace %s: empty last part", ErrInvalidKey, ns)
	}
	for i, part := range parts {
		if !utf8.ValidString(part) {
			return "", fmt.Errorf("%w: namespace %s: part %d is not valid UTF-8", ErrInvalidKey, ns, i+1)
		}
		if i < len(parts)-1 && strings.Contains(part, Separator) {
			return "", fmt.Errorf("%w: namespace %s: part %d (%q) contains %q; only the last part may", ErrInvalidKey, ns, i+1, part, Separator)
		}
	}
	key := string(ns) + Separator + strings.Join(parts, Separator)
	if len(key) > MaxKeyBytes {
		return "", fmt.Errorf("%w: namespace %s: %d bytes, DynamoDB's partition key limit is %d", ErrInvalidKey, ns, len(key), MaxKeyBytes)
	}
	return key, nil
}

// NamespaceOf returns the namespace of a key built by [Key]: the text before its first
// "#". It reports false for a key that starts with no namespace (an item written by
// something else, such as an older version that did not use namespaces).
func NamespaceOf(key string) (Namespace, bool) {
	name, _, found := strings.Cut(key, Separator)
	if !found || !slices.Contains(namespaces, Namespace(name)) {
		return "", false
	}
	return Namespace(name), true
}

// IdempotencyKey is the layout of an idempotency record: "idempotency#" + prefix + "#" +
// key, the prefix being the middleware's Config.KeyPrefix ("" for none, which gives
// "idempotency##" + key). The prefix must not contain "#". Package idempotency derives
// key from the message's idempotency key (see idempotency.StoredKey).
func IdempotencyKey(prefix, key string) (string, error) {
	return Key(Idempotency, prefix, key)
}

// UniqueKey is the layout of a unique job's key item: "unique#" + the job's UniqueKey.
func UniqueKey(key string) (string, error) {
	return Key(Unique, key)
}

// JobRecordKey is the layout of a job's record (package jobs): "job#" + the job id
// ([sqsworker.AttributeJobID]). The record also holds the job's cancellation request, so
// the [Cancellation] namespace stays reserved and unused.
func JobRecordKey(jobID string) (string, error) {
	return Key(JobRecords, jobID)
}

// SchedulerLeaseKey is the layout of the scheduler's leader lease item named name:
// "scheduler#lease#" + name.
func SchedulerLeaseKey(name string) (string, error) {
	return Key(Scheduler, "lease", name)
}

// SchedulerScheduleKey is the layout of one schedule's state item: "scheduler#schedule#"
// + the schedule's name.
func SchedulerScheduleKey(schedule string) (string, error) {
	return Key(Scheduler, "schedule", schedule)
}

// LimitPermitsKey is the layout of one item of a fleet-wide concurrency limit's permits
// (package fleetlimit): "limit#permits#" + the limit's name + "#" + the shard's number
// (decimal) + "#" + the limited key. The name must not contain "#".
func LimitPermitsKey(limit string, shard int, key string) (string, error) {
	return Key(Limits, "permits", limit, strconv.Itoa(shard), key)
}

// LimitRateKey is the layout of one item of a fleet-wide rate limit (package
// fleetlimit): "limit#rate#" + the limit's name + "#" + the shard's number (decimal) +
// "#" + the limited key. The name must not contain "#".
func LimitRateKey(limit string, shard int, key string) (string, error) {
	return Key(Limits, "rate", limit, strconv.Itoa(shard), key)
}

// BatchKey is the layout of a batch's item (package batches): "batch#meta#" + the
// batch id. The batch id must not contain "#" (package batches uses ULIDs).
func BatchKey(batchID string) (string, error) {
	return Key(Batches, "meta", batchID)
}

// BatchShardKey is the layout of one counter shard of a batch: "batch#shard#" + the
// batch id + "#" + the shard's number (decimal).
func BatchShardKey(batchID string, shard int) (string, error) {
	return Key(Batches, "shard", batchID, strconv.Itoa(shard))
}

// BatchJobKey is the layout of the marker of one finished job of a batch:
// "batch#job#" + the batch id + "#" + the job id ([sqsworker.AttributeJobID]).
func BatchJobKey(batchID, jobID string) (string, error) {
	return Key(Batches, "job", batchID, jobID)
}
