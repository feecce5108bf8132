package idempotency

import "time"

// Status is the state of an idempotency record, stored as a string.
type Status string

const (
	// StatusInProgress marks a key claimed by a running handler. The claim is a lease
	// that ends at Record.InProgressExpiresAt.
	StatusInProgress Status = "IN_PROGRESS"
	// StatusCompleted marks a key whose handler succeeded; duplicates skip the handler
	// until Record.ExpiresAt.
	StatusCompleted Status = "COMPLETED"
)

// Record is one idempotency record: the state of one key.
//
// Whether a record has expired is never stored; [Record.Expired] and
// [Record.LeaseExpired] compute it from the current time, because DynamoDB TTL deletes
// expired items late (typically within days) and emulators never do.
type Record struct {
	// Key is the stored key ([StoredKey]: namespace, prefix and key; DynamoDB attribute
	// "id").
	Key string
	// Status is StatusInProgress or StatusCompleted ("status").
	Status Status
	// ExpiresAt is when the whole record stops counting ("expiration", stored in epoch
	// SECONDS so DynamoDB TTL can delete the item). Stores keep second precision
	// (sub-second parts are truncated).
	ExpiresAt time.Time
	// InProgressExpiresAt is when the in-progress lease ends ("in_progress_expiry", stored
	// in epoch MILLISECONDS). Stores keep millisecond precision. Zero on completed
	// records; never zero on in-progress records.
	InProgressExpiresAt time.Time
	// Deadline is the latest time the in-progress claim's handler runs: its context's
	// deadline ("in_progress_deadline", epoch MILLISECONDS). Duplicates are deferred until
	// then instead of for the short, renewed lease. Zero when the handler had no deadline
	// and on completed records.
	Deadline time.Time
	// Lease is the random owner token of the claim that wrote the record ("lease").
	// Every update and delete is conditioned on it.
	Lease string
	// PayloadHash is the hash of the message's validated fields ("validation"); empty
	// when validation is disabled.
	PayloadHash string
	// Result is the result the handler stored with [SetResult] ("data", binary). Nil when
	// the handler stored none; stores return an empty result as nil.
	Result []byte
	// Interrupted is how many receives of message InterruptedMessage ended interrupted by
	// their host ([sqsworker.ErrInterrupted]: a shutdown's drain deadline, a Lambda
	// deadline) rather than failing ("interrupted"); kept by [InterruptionStore.Interrupt]
	// between attempts and carried by the claim that takes the record over
	// ([InterruptionStore.TakeOver]). Zero when none was recorded.
	Interrupted int
	// InterruptedMessage is the SQS message id Interrupted counts for
	// ("interrupted_message"): another message under the same key starts from zero.
	InterruptedMessage string
}

// interruptedLeaseEnd is the lease end an interrupted record keeps: long past, so the
// next claim takes the key at once.
var interruptedLeaseEnd = time.UnixMilli(1).UTC()

// Expired reports whether the record has expired at now: its expiration second is
// strictly before now's (the DynamoDB condition "expiration < :now" with epoch seconds).
// A record with a zero ExpiresAt never expires this way.
func (r Record) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && r.ExpiresAt.Unix() < now.Unix()
}

// LeaseExpired reports whether r is an in-progress record whose lease ended before now,
// compared in epoch milliseconds (the condition "in_progress_expiry < :now_ms"). An
// in-progress record without a lease expiry never counts as expired here.
func (r Record) LeaseExpired(now time.Time) bool {
	return r.Status == StatusInProgress && !r.InProgressExpiresAt.IsZero() &&
		r.InProgressExpiresAt.UnixMilli() < now.UnixMilli()
}

// Claimable reports whether a new claim may replace r at now: the record has expired, or
// its in-progress lease has and it keeps no interrupted receives (such a record is taken
// over instead, see [Record.TakeOverable]). It is the condition of [Store.PutInProgress],
// in code.
func (r Record) Claimable(now time.Time) bool {
	return r.Expired(now) || r.LeaseExpired(now) && r.Interrupted == 0
}

// TakeOverable reports whether r keeps interrupted receives and its lease has ended at
// now, unexpired: the next claim takes it over with [InterruptionStore.TakeOver], keeping
// the count.
func (r Record) TakeOverable(now time.Time) bool {
	return !r.Expired(now) && r.LeaseExpired(now) && r.Interrupted > 0
}

// LeaseRemaining returns how long the in-progress lease of r still runs at now; zero
// when it has ended or r is not in progress.
func (r Record) LeaseRemaining(now time.Time) time.Duration {
	if r.Status != StatusInProgress || r.InProgressExpiresAt.IsZero() {
		return 0
	}
	return max(r.InProgressExpiresAt.Sub(now), 0)
}

// normalize truncates the times to the precision stores keep (seconds for ExpiresAt,
// milliseconds for InProgressExpiresAt), in UTC, so every Store returns equal Records.
func (r Record) normalize() Record {
	if !r.ExpiresAt.IsZero() {
		r.ExpiresAt = time.Unix(r.ExpiresAt.Unix(), 0).UTC()
	}
	if !r.InProgressExpiresAt.IsZero() {
		r.InProgressExpiresAt = time.UnixMilli(r.InProgressExpiresAt.UnixMilli()).UTC()
	}
	if !r.Deadline.IsZero() {
		r.Deadline = time.UnixMilli(r.Deadline.UnixMilli()).UTC()
	}
	if len(r.Result) > 0 {
		r.Result = append([]byte{}, r.Result...)
	} else {
		r.Result = nil
	}
	return r
}

// Clock tells the current time. Tests inject a fake to exercise expiry without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real [Clock]: time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
