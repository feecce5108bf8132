package redrive

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Defaults for [Config].
const (
	defaultVisibilityTimeout = 60 * time.Second
	defaultWaitTime          = time.Second
	defaultSendAttempts      = 3
	defaultRetryDelay        = 200 * time.Millisecond
	// releaseTimeout bounds the final release of held messages, which runs even after
	// the run's context is cancelled.
	releaseTimeout = 30 * time.Second
	// maxEmptyReceives is how many receives in a row may return nothing new, while the
	// source still counts visible messages, before a run ends.
	maxEmptyReceives = 3
)

// Config describes one client-side move. The zero values of the optional fields take
// the defaults noted.
type Config struct {
	// Source specifies the URL of the queue to move messages from, normally a dead-letter
	// queue. Required.
	Source string
	// Destination specifies the URL of the queue to move messages to: any queue, standard
	// or FIFO, not only the dead-letter queue's source. Required, and not Source. On a
	// FIFO destination a message keeps its group (a message from a standard queue gets a
	// group of its own, its message id) and gets a new deduplication id.
	Destination string
	// MaxMessages specifies the most messages to move (with DryRun: to report as
	// movable); if zero, every matching message.
	MaxMessages int
	// RatePerSecond specifies the most messages sent per second; if zero, unlimited.
	// Below 10 it also caps the batch size.
	RatePerSecond float64
	// DryRun receives and reports what would move, then releases every message: nothing
	// is sent or deleted. The receives still count toward ApproximateReceiveCount.
	DryRun bool
	// Filter selects the messages to move; if nil, all of them. Messages it rejects stay
	// in the source. On a FIFO source, SQS hands out a group's messages in order only, so
	// a rejected message hides the rest of its group until the run ends.
	Filter Filter
	// VisibilityTimeout specifies how long a received message stays hidden: while it is
	// being moved, and for skipped messages until the run ends and releases them (with
	// visibility 0). Whole seconds from 1 s to 12 h; if zero, defaults to 60 s.
	VisibilityTimeout time.Duration
	// WaitTime specifies each ReceiveMessage's long-poll wait, in whole seconds up to
	// 20 s; if zero, defaults to 1 s. The run ends when a receive returns no message it
	// has not seen yet that was in the source at the start, and either SQS counts no
	// visible message in the source, or the receive returned only later arrivals after
	// as many messages as the source held at the start (or after three such receives in
	// a row while SQS still counts visible messages: see Result.Warnings).
	WaitTime time.Duration
	// SendAttempts specifies how many times an entry that SendMessageBatch reports as
	// failed (a per-entry error that is not the sender's fault) is tried in all; retries
	// send the entry alone. If zero, defaults to 3.
	SendAttempts int
	// RetryDelay specifies the wait before the first retry, doubled for each further one;
	// if zero, defaults to 200 ms.
	RetryDelay time.Duration
	// Logger receives warnings (FIFO reordering, messages left behind); if nil, logs are
	// discarded.
	Logger *slog.Logger
	// Progress, if set, is called after each received batch with the counts so far.
	Progress func(Progress)
}

// Progress is the running count of a [Mover] run, passed to Config.Progress.
type Progress struct {
	// Received counts distinct messages received from the source that were there when
	// the move started (not Result.Arrived).
	Received int
	// Moved counts messages sent, confirmed and deleted from the source (with DryRun:
	// messages that would move).
	Moved int
	// Skipped counts messages the filter rejected.
	Skipped int
	// Left counts matching messages left in the source (too large, or send failed).
	Left int
}

// Result reports what a [Mover] run did.
type Result struct {
	// MoveID identifies the run: every message it sends carries it in [AttributeMoveID]
	// (when it fits).
	MoveID string `json:"move_id"`
	// Received counts distinct messages received from the source that were there when
	// the move started.
	Received int `json:"received"`
	// Arrived counts messages that reached the source during the move: copies this move
	// sent that failed again and came back (a worker's dead-letter copy, or SQS's
	// redrive policy), and new dead letters. A move never takes them: they stay in the
	// source, for a later run once the cause is fixed.
	Arrived int `json:"arrived"`
	// Skipped counts messages the filter rejected; they stay in the source.
	Skipped int `json:"skipped"`
	// Matched counts messages the filter accepted, up to MaxMessages.
	Matched int `json:"matched"`
	// Moved counts messages sent to the destination, confirmed by SQS and then deleted
	// from the source.
	Moved int `json:"moved"`
	// WouldMove counts, in a dry run, the matching messages that would be moved.
	WouldMove int `json:"would_move"`
	// TooLarge lists the ids of matching messages larger than the destination's
	// MaximumMessageSize. They are left in the source, never dropped.
	TooLarge []string `json:"too_large,omitempty"`
	// SendFailed lists matching messages whose send failed on every attempt; they are
	// left in the source.
	SendFailed []MessageError `json:"send_failed,omitempty"`
	// NotDeleted lists messages that reached the destination but could not be deleted
	// from the source: they are now in both queues.
	NotDeleted []MessageError `json:"not_deleted,omitempty"`
	// Batches counts SendMessageBatch requests, single-entry retries included.
	Batches int `json:"batches"`
	// MaxBatchBytes is the byte limit batches were packed to: the destination's
	// MaximumMessageSize.
	MaxBatchBytes int `json:"max_batch_bytes"`
	// Warnings holds what an operator must know, such as the FIFO groups whose order
	// changed.
	Warnings []string `json:"warnings,omitempty"`
}

// MessageError names a message and what went wrong with it.
type MessageError struct {
	// ID is the SQS message id.
	ID string `json:"id"`
	// Error is the error text: SQS's code and message for a failed entry.
	Error string `json:"error"`
}

// Partial reports whether some matching messages were not moved (too large, send
// failed) or were moved without being deleted from the source.
func (r *Result) Partial() bool {
	return len(r.TooLarge)+len(r.SendFailed)+len(r.NotDeleted) > 0
}

func (c *Config) validate() error {
	var problems []error
	if c.Source == "" {
		problems = append(problems, errors.New("redrive: Source is required"))
	}
	if c.Destination == "" {
		problems = append(problems, errors.New("redrive: Destination is required"))
	}
	if c.Source != "" && c.Source == c.Destination {
		problems = append(problems, errors.New("redrive: Destination must differ from Source"))
	}
	if c.MaxMessages < 0 {
		problems = append(problems, fmt.Errorf("redrive: MaxMessages %d is negative", c.MaxMessages))
	}
	if c.RatePerSecond < 0 {
		problems = append(problems, fmt.Errorf("redrive: RatePerSecond %g is negative", c.RatePerSecond))
	}
	// ReceiveMessage cannot carry a visibility of 0 (the SDK leaves zero out and the
	// queue's default applies), so the least is 1 s.
	if c.VisibilityTimeout < time.Second || c.VisibilityTimeout > sqsinfo.MaxVisibilityTimeout {
		problems = append(problems, fmt.Errorf("redrive: VisibilityTimeout %s is outside 1s to 12h", c.VisibilityTimeout))
	}
	if c.WaitTime < 0 || c.WaitTime > sqsinfo.MaxWaitTime {
		problems = append(problems, fmt.Errorf("redrive: WaitTime %s is outside 0 to 20s", c.WaitTime))
	}
	if c.SendAttempts < 0 {
		problems = append(problems, fmt.Errorf("redrive: SendAttempts %d is negative", c.SendAttempts))
	}
	return errors.Join(problems...)
}
