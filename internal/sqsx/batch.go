package sqsx

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Result is what became of one entry of a batch call. Err is nil when SQS confirmed the
// entry (it was in the response's Successful list). Otherwise Err is an [*EntryError]
// (SQS answered for the entry with a failure, left it out of the response, or it was
// never sent because it was too large) or a [*CallError] (the whole request failed).
type Result struct {
	Err error
	// MessageID is the new message's id (SendMessageBatch only).
	MessageID string
	// SequenceNumber is the new message's sequence number (SendMessageBatch to a FIFO
	// queue only).
	SequenceNumber string
}

// EntryError is one entry's failure inside a batch response.
type EntryError struct {
	// Op is the SQS action, for example "DeleteMessageBatch".
	Op string
	// Code and Message are SQS's (BatchResultErrorEntry), or CodeMissing / CodeTooLarge.
	Code, Message string
	// SenderFault is SQS's flag: the request entry itself is wrong (an expired receipt
	// handle, an invalid parameter); sending it again will not help.
	SenderFault bool
}

// Codes of entry failures this package reports itself.
const (
	// CodeMissing: the entry was in neither list of the response. It was not confirmed,
	// so it counts as failed (and may be retried).
	CodeMissing = "sqsx.MissingResult"
	// CodeTooLarge: the entry alone is larger than the batch's byte limit; not sent.
	CodeTooLarge = "sqsx.EntryTooLarge"
)

// Error returns "OP entry failed: CODE: MESSAGE".
func (e *EntryError) Error() string {
	return fmt.Sprintf("%s entry failed: %s: %s", e.Op, e.Code, e.Message)
}

// CallError is the failure of a whole batch request: no entry of it was confirmed.
type CallError struct {
	Op      string
	Entries int
	Err     error
}

// Error returns "OP of N entries: ERR".
func (e *CallError) Error() string {
	return fmt.Sprintf("%s of %d entries: %v", e.Op, e.Entries, e.Err)
}

// Unwrap returns the SDK's error.
func (e *CallError) Unwrap() error { return e.Err }

// Retryable reports whether sending the entry again can succeed: true for a whole-call
// failure (unless its context ended), an entry SQS failed without blaming the sender, and
// a missing entry; false for sender faults, entries too large, and nil.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if entry, ok := errors.AsType[*EntryError](err); ok {
		return !entry.SenderFault
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ErrorCode returns the entry's SQS error code, the SDK error's code for a call error,
// or "".
func ErrorCode(err error) string {
	if entry, ok := errors.AsType[*EntryError](err); ok {
		return entry.Code
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		return coded.ErrorCode()
	}
	return ""
}

// Response is a batch response reduced to what [Batch] reads: the ids SQS confirmed
// (with the new message's id and sequence number for SendMessageBatch) and its failed
// entries.
type Response struct {
	Successful []Success
	Failed     []types.BatchResultErrorEntry
}

// Success is one confirmed entry.
type Success struct {
	ID, MessageID, SequenceNumber string
}

// EntryID is the one entry-id scheme: an entry's index in its request, "0" to "9". Ids
// are unique per request, so one message received twice in a batch cannot clash.
func EntryID(index int) string { return strconv.Itoa(index) }

// Chunk splits items, in order, into chunks of at most maxEntries items (0, or more than
// [sqsinfo.MaxBatchEntries], means that limit) whose sizes add up to at most maxBytes. With
// size nil (or maxBytes <= 0) only the count applies. An item larger than maxBytes on its
// own gets a chunk of its own.
func Chunk[T any](items []T, maxEntries int, size func(T) int, maxBytes int) [][]T {
	if maxEntries <= 0 || maxEntries > sqsinfo.MaxBatchEntries {
		maxEntries = sqsinfo.MaxBatchEntries
	}
	var chunks [][]T
	start, bytes := 0, 0
	for i, item := range items {
		itemBytes := 0
		if size != nil && maxBytes > 0 {
			itemBytes = size(item)
		}
		if i > start && (i-start == maxEntries || (maxBytes > 0 && bytes+itemBytes > maxBytes)) {
			chunks = append(chunks, items[start:i])
			start, bytes = i, 0
		}
		bytes += itemBytes
	}
	if start < len(items) {
		chunks = append(chunks, items[start:])
	}
	return chunks
}

// Batch sends items with call, in chunks made by [Chunk], and returns one [Result] per
// item, in the order of items. call gets the entry ids to use ([EntryID] of each
// item's index in its chunk) and returns the response. Batch reads every entry: the
// first answer for an id wins (a duplicate id in the response is ignored, as are ids it
// never sent), an entry in neither list is a [CodeMissing] failure, a failed request
// fails every entry of its chunk with a [*CallError]. Items larger than maxBytes alone are
// not sent ([CodeTooLarge], a sender fault).
func Batch[T any](ctx context.Context, op string, items []T, size func(T) int, maxBytes int,
	call func(ctx context.Context, ids []string, chunk []T) (Response, error)) []Result {
	results := make([]Result, len(items))
	offset := 0
	for _, chunk := range Chunk(items, sqsinfo.MaxBatchEntries, size, maxBytes) {
		base := offset
		offset += len(chunk)
		if len(chunk) == 1 && size != nil && maxBytes > 0 && size(chunk[0]) > maxBytes {
			results[base].Err = &EntryError{Op: op, Code: CodeTooLarge, SenderFault: true,
				Message: fmt.Sprintf("%d bytes, more than the %d bytes a request may carry", size(chunk[0]), maxBytes)}
			continue
		}
		ids := make([]string, len(chunk))
		for i := range chunk {
			ids[i] = EntryID(i)
		}
		response, err := call(ctx, ids, chunk)
		if err != nil {
			callErr := &CallError{Op: op, Entries: len(chunk), Err: err}
			for i := range chunk {
				results[base+i].Err = callErr
			}
			continue
		}
		readResponse(op, response, results[base:base+len(chunk)])
	}
	return results
}

// readResponse fills results (one per entry of the request) from response.
func readResponse(op string, response Response, results []Result) {
	answered := make([]bool, len(results))
	index := func(id string) (int, bool) {
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 || i >= len(results) || EntryID(i) != id || answered[i] {
			return 0, false
		}
		answered[i] = true
		return i, true
	}
	for _, ok := range response.Successful {
		if i, fresh := index(ok.ID); fresh {
			results[i] = Result{MessageID: ok.MessageID, SequenceNumber: ok.SequenceNumber}
		}
	}
	for _, failed := range response.Failed {
		if i, fresh := index(aws.ToString(failed.Id)); fresh {
			results[i].Err = &EntryError{Op: op, Code: aws.ToString(failed.Code), Message: aws.ToString(failed.Message), SenderFault: failed.SenderFault}
		}
	}
	for i := range results {
		if !answered[i] {
			results[i].Err = &EntryError{Op: op, Code: CodeMissing, Message: "SQS returned no result for the entry"}
		}
	}
}
