package producer

import (
	"errors"
	"fmt"
)

// ErrTooLarge matches (with errors.Is) every [*TooLargeError].
var ErrTooLarge = errors.New("producer: message too large")

// TooLargeError reports a job whose message is larger than its queue accepts.
type TooLargeError struct {
	// QueueURL is the queue the job was sent to.
	QueueURL string
	// Size is the message's size in bytes as SQS counts it: body plus message attributes
	// (names, data types and values).
	Size int
	// Limit is the queue's MaximumMessageSize in bytes.
	Limit int
	// Offloaded is true when the message was still too large after the PayloadStore.
	Offloaded bool
}

// Error names the size and the limit.
func (e *TooLargeError) Error() string {
	if e.Offloaded {
		return fmt.Sprintf("producer: message for %s is %d bytes after offloading its payload, above the queue's MaximumMessageSize of %d bytes", e.QueueURL, e.Size, e.Limit)
	}
	return fmt.Sprintf("producer: message for %s is %d bytes (body plus attributes), above the queue's MaximumMessageSize of %d bytes; configure a PayloadStore (claim check) to send it by reference", e.QueueURL, e.Size, e.Limit)
}

// Is reports true for [ErrTooLarge].
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ErrDuplicateJob matches (with errors.Is) every [*DuplicateJobError].
var ErrDuplicateJob = errors.New("producer: duplicate unique job")

// DuplicateJobError reports a unique job whose key was already taken: nothing was sent.
type DuplicateJobError struct {
	// Key is the job's UniqueKey.
	Key string
	// MessageID is the message id of the job that took the key first. It is empty when
	// Pending is true.
	MessageID string
	// Pending is true when the first producer had not confirmed its send within
	// Config.UniqueWait (it may still fail, freeing the key).
	Pending bool
}

// Error names the key and the first job's message id.
func (e *DuplicateJobError) Error() string {
	if e.Pending {
		return fmt.Sprintf("producer: unique key %q is reserved by a send not confirmed yet; nothing sent", e.Key)
	}
	return fmt.Sprintf("producer: unique key %q is taken by message %s; nothing sent", e.Key, e.MessageID)
}

// Is reports true for [ErrDuplicateJob].
func (e *DuplicateJobError) Is(target error) bool { return target == ErrDuplicateJob }

// ErrUniqueNotConfirmed is returned, wrapped, with the message id of a unique job that was
// sent but whose key could not be marked as sent: duplicates wait for the reservation to
// expire (Config.UniquePending) instead of learning the id. The job itself was sent; do
// not send it again.
var ErrUniqueNotConfirmed = errors.New("producer: unique job sent, but its key was not confirmed")

// ErrTooManyAttributes matches (with errors.Is) every [*TooManyAttributesError].
var ErrTooManyAttributes = errors.New("producer: too many message attributes")

// TooManyAttributesError reports a job whose message attributes, with the ones sqsworker
// adds (job type, idempotency key, due time, unique release), exceed SQS's limit of
// 10 per message (sqsinfo.MaxMessageAttributes): nothing was sent, no service was called.
// The trace context is never counted: it goes in the AWSTraceHeader system attribute
// when the message attributes are spent.
type TooManyAttributesError struct {
	// User is the number of the job's own attributes (Job.Attributes).
	User int
	// Own is the number of attributes sqsworker adds.
	Own int
	// Limit is SQS's limit (10).
	Limit int
}

// Error names the numbers.
func (e *TooManyAttributesError) Error() string {
	return fmt.Sprintf("producer: %d user %s + %d sqsworker %s exceed the SQS limit of %d message attributes",
		e.User, plural(e.User, "attribute"), e.Own, plural(e.Own, "attribute"), e.Limit)
}

// Is reports true for [ErrTooManyAttributes].
func (e *TooManyAttributesError) Is(target error) bool { return target == ErrTooManyAttributes }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
