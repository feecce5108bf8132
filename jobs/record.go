package jobs

import (
	"encoding/json"
	"time"
)

// State is a job's state in its record.
type State string

// The states; see the package documentation for when each is written.
const (
	StateEnqueued     State = "enqueued"
	StateRunning      State = "running"
	StateSucceeded    State = "succeeded"
	StateFailed       State = "failed"
	StateRetrying     State = "retrying"
	StateDeadLettered State = "dead-lettered"
	StateCancelled    State = "cancelled"
	StateInterrupted  State = "interrupted"
)

// Finished reports whether s is a final state: succeeded, failed, dead-lettered or
// cancelled. A redriven dead letter runs again and leaves it.
func (s State) Finished() bool {
	switch s {
	case StateSucceeded, StateFailed, StateDeadLettered, StateCancelled:
		return true
	}
	return false
}

// Bounds of a record's parts, so an item stays far below DynamoDB's 400 KB limit.
const (
	// MaxErrorBytes bounds Record.LastError: a longer error text is cut at a UTF-8
	// boundary and ends in "...".
	MaxErrorBytes = 1024
	// MaxProgressBytes bounds one progress document ([Progress] refuses a larger one).
	MaxProgressBytes = 4 * 1024
	// MaxResultBytes bounds the result kept in the record. [SetResult] keeps a larger
	// one (up to MaxLargeResultBytes) in S3 with Config.LargeResults, and refuses it
	// without.
	MaxResultBytes = 256 * 1024
)

// Record is one job's record.
type Record struct {
	// ID is the job id.
	ID string `json:"id"`
	// State is the job's state.
	State State `json:"state"`
	// Type and Queue are the job type and the URL of the queue of its last start.
	Type  string `json:"type,omitempty"`
	Queue string `json:"queue,omitempty"`
	// PayloadKey is, for a job whose payload is encrypted (package encrypt), the ARN of
	// the KMS key its envelope names ([PayloadKeyMalformed] when the envelope does not
	// parse), recorded at each start; "" for a job in clear. The record never holds the
	// payload.
	PayloadKey string `json:"payload_key,omitempty"`
	// Attempts counts the starts of the handler.
	Attempts int `json:"attempts"`
	// EnqueuedAt is when [Store.Enqueue] recorded the job; zero if it did not.
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
	// FirstStartedAt and LastStartedAt are the first and the latest start.
	FirstStartedAt time.Time `json:"first_started_at,omitzero"`
	LastStartedAt  time.Time `json:"last_started_at,omitzero"`
	// UpdatedAt is the record's last write.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// LastError is the error of the latest failed attempt (at most MaxErrorBytes).
	LastError string `json:"last_error,omitempty"`
	// Result is the JSON document the handler stored with [SetResult], when it is at
	// most MaxResultBytes.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef refers to the result kept in S3 instead ([LargeResults]): the record
	// holds only this reference. Read the document with [Store.Result].
	ResultRef *ResultRef `json:"result_ref,omitempty"`
	// Progress is the latest JSON document the handler reported with [Progress].
	Progress json.RawMessage `json:"progress,omitempty"`
	// CancelRequested reports that [Store.Cancel] asked for the job to stop.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// ExpiresAt is when the record expires (the table's TTL attribute).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PayloadKeyMalformed is Record.PayloadKey of a job whose encryption envelope does not
// parse.
const PayloadKeyMalformed = "malformed"
