package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Mover moves messages from one queue to another on the client side: it receives a
// batch, sends the selected messages to the destination with SendMessageBatch and,
// only for the entries SQS confirmed, deletes them from the source. A crash can
// therefore duplicate a message (present in both queues) but never lose one.
//
// A run takes the messages that are in the source when it starts, each at most once,
// and stops: a message that reaches the source during the run (a copy it sent that a
// worker still failing the job dead-letters again, or a new dead letter) is left there
// and counted in Result.Arrived, so a move beside a failing worker cannot bounce a
// message back and forth. Such a message is recognised by [AttributeMoveID], by the
// message id SQS returned for the copy, or by a SentTimestamp after the start (SQS's
// Date header, or the local clock when it is later by at most 5 s). One gap remains: a
// message that SQS's redrive policy moves into a standard dead-letter queue (the run's
// source) during the run, first sent before the run started, keeps its SentTimestamp
// and may be moved too, once.
//
// Use it for what StartMessageMoveTask cannot do: a filter, a limit, a dry run, any
// destination, FIFO destinations with new deduplication ids.
type Mover struct {
	api    MoverAPI
	config Config
}

// NewMover fills in config's defaults and validates it, reporting every problem at once
// (joined with errors.Join).
func NewMover(api MoverAPI, config Config) (*Mover, error) {
	if config.VisibilityTimeout == 0 {
		config.VisibilityTimeout = defaultVisibilityTimeout
	}
	if config.WaitTime == 0 {
		config.WaitTime = defaultWaitTime
	}
	if config.SendAttempts == 0 {
		config.SendAttempts = defaultSendAttempts
	}
	if config.RetryDelay == 0 {
		config.RetryDelay = defaultRetryDelay
	}
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	if err := config.validate(); err != nil {
		return nil, err
	}
	if api == nil {
		return nil, errors.New("redrive: nil SQS client")
	}
	return &Mover{api: api, config: config}, nil
}

// AttributeRedriveCount is the message attribute (Number) a [Mover] adds to each message
// it moves: how many times the tool moved it, 1 on its first move (the value it carried
// plus one). A message that already has 10 message attributes (the SQS maximum), or that
// the attribute would make larger than the destination allows, moves unchanged, and the
// count goes to the log (Info) only.
const AttributeRedriveCount = "x-redrive-count"

// item is one message selected for sending.
type item struct {
	raw     types.Message
	message *sqsworker.Message
	size    int
	// attributes are the message attributes to send: the received ones, plus
	// AttributeRedriveCount when it fits.
	attributes map[string]types.MessageAttributeValue
}

// run holds the state of one Mover.Run.
type run struct {
	*Mover
	result    *Result
	dest      *sqsinfo.Queue
	maxBytes  int
	maxCount  int
	seen      map[string]bool
	held      map[string]string // message id -> latest receipt handle, released at the end
	heldOrder []string
	reordered map[string][]string // FIFO group -> ids re-enqueued at the end of it
	nextSend  time.Time
	// hiddenSince is when the source was first seen with no visible message but some
	// hidden by someone else (zero otherwise).
	hiddenSince time.Time
	// start tells the messages present at the start from later arrivals.
	start *startLine
}

// Run moves the messages. It returns the counts so far together with any error; an
// error leaves every message that was not confirmed by the destination in the source.
// Messages it received and did not move are released (visibility 0) before it returns,
// even when ctx is cancelled.
//
// Errors: the queues cannot be read ([ErrQueueNotFound]), or a ReceiveMessage,
// SendMessageBatch or DeleteMessageBatch request failed (per-entry failures are not
// errors: they are retried, then reported in the Result).
func (m *Mover) Run(ctx context.Context) (result *Result, err error) {
	r := &run{
		Mover:     m,
		result:    &Result{},
		seen:      map[string]bool{},
		held:      map[string]string{},
		reordered: map[string][]string{},
		maxCount:  sqsinfo.MaxBatchEntries,
	}
	if _, err := loadQueue(ctx, m.api, m.config.Source); err != nil {
		return r.result, err
	}
	// The destination is checked before anything is received: a missing destination
	// costs no message a receive.
	if r.dest, err = loadQueue(ctx, m.api, m.config.Destination); err != nil {
		if errors.Is(err, ErrQueueNotFound) {
			return r.result, DestinationMissing(m.config.Destination, err)
		}
		return r.result, err
	}
	r.maxBytes = r.dest.MaximumMessageSize
	if r.maxBytes <= 0 {
		r.maxBytes = sqsinfo.DefaultMaximumMessageSize
	}
	r.maxBytes = min(r.maxBytes, sqsinfo.MaxBatchBytes)
	r.result.MaxBatchBytes = r.maxBytes
	if rate := m.config.RatePerSecond; rate > 0 && rate < sqsinfo.MaxBatchEntries {
		r.maxCount = max(1, int(rate))
	}
	if err := r.begin(ctx); err != nil {
		return r.result, err
	}
	defer func() {
		if releaseErr := r.release(ctx); releaseErr != nil {
			r.warn(releaseErr.Error())
		}
		r.warnReordered()
	}()
	err = r.loop(ctx)
	return r.result, err
}

func (r *run) loop(ctx context.Context) error {
	empty := 0
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("redrive: move stopped: %w", err)
		}
		limit := r.config.MaxMessages
		if limit > 0 && r.result.Matched >= limit {
			return nil
		}
		count := sqsinfo.MaxBatchEntries
		if limit > 0 && r.config.Filter == nil {
			count = min(count, limit-r.result.Matched)
		}
		output, err := r.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(r.config.Source),
			MaxNumberOfMessages:         int32(count),
			VisibilityTimeout:           sqsx.VisibilitySeconds(r.config.VisibilityTimeout),
			WaitTimeSeconds:             sqsx.WaitSeconds(r.config.WaitTime),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return fmt.Errorf("redrive: receiving from %s: %w", r.config.Source, err)
		}
		fresh, arrived := 0, 0
		var selected []*item
		for _, raw := range output.Messages {
			id := aws.ToString(raw.MessageId)
			if r.seen[id] {
				// Visible again after VisibilityTimeout: keep the newest receipt handle.
				if _, ok := r.held[id]; ok {
					r.held[id] = aws.ToString(raw.ReceiptHandle)
				}
				continue
			}
			r.seen[id] = true
			message := convertMessage(r.config.Source, raw)
			if r.start.arrived(raw) {
				// Not present at the start (a copy this move sent that failed again, or a
				// new dead letter): left in the source, never moved by this run.
				arrived++
				r.result.Arrived++
				r.hold(message)
				continue
			}
			fresh++
			r.result.Received++
			if r.config.Filter != nil && !r.config.Filter(message) {
				r.result.Skipped++
				r.hold(message)
				continue
			}
			if limit > 0 && r.result.Matched >= limit {
				r.hold(message) // beyond the limit: left for a later run
				continue
			}
			r.result.Matched++
			size := sqsx.MessageSize(message)
			if size > r.maxBytes {
				r.result.TooLarge = append(r.result.TooLarge, id)
				r.config.Logger.Warn("redrive: message larger than the destination's MaximumMessageSize left in the source",
					"message_id", id, "bytes", size, "limit", r.maxBytes)
				r.hold(message)
				continue
			}
			if r.config.DryRun {
				r.result.WouldMove++
				r.hold(message)
				continue
			}
			attributes, sendSize := r.moveAttributes(raw, message, size)
			selected = append(selected, &item{raw: raw, message: message, size: sendSize, attributes: attributes})
		}
		if fresh == 0 && arrived > 0 && r.result.Received >= r.start.count {
			// As many messages received as the source held at the start, and SQS now
			// hands out only later arrivals: the move is done.
			return nil
		}
		if fresh == 0 {
			// An empty answer can be false (seen on the emulator under load; short polls
			// on AWS): believe it only when SQS also counts no visible message.
			counts, err := r.counts(ctx)
			if err != nil {
				return err
			}
			visible, hidden := counts.visible, counts.hidden
			if visible == 0 {
				// Messages in flight that this run does not hold belong to another
				// consumer or to a receive of ours whose response was lost (SQS counts
				// the receive and hides the messages for VisibilityTimeout). Those come
				// back within VisibilityTimeout: keep receiving that long, then stop.
				elsewhere := hidden - len(r.held)
				if elsewhere <= 0 {
					return nil
				}
				if r.hiddenSince.IsZero() {
					r.hiddenSince = time.Now()
				}
				if time.Since(r.hiddenSince) <= r.config.VisibilityTimeout+time.Second {
					continue
				}
				r.warn(fmt.Sprintf("stopped with %d messages in flight elsewhere in %s (another consumer, or a receive whose answer was lost) after waiting %s for them; run again to move them",
					elsewhere, r.config.Source, r.config.VisibilityTimeout))
				return nil
			}
			r.hiddenSince = time.Time{}
			if empty++; empty >= maxEmptyReceives {
				r.warn(fmt.Sprintf("stopped after %d receives returned no message that was in %s when the move started, while SQS still counted %d visible there; run again to move the rest",
					empty, r.config.Source, visible))
				return nil
			}
			continue
		}
		empty = 0
		for _, batch := range packBatches(selected, r.maxCount, r.maxBytes) {
			if err := r.pace(ctx, len(batch)); err != nil {
				for _, it := range batch {
					r.hold(it.message)
				}
				return err
			}
			if err := r.moveBatch(ctx, batch); err != nil {
				return err
			}
		}
		r.report()
	}
}

// DestinationMissing returns the error a move reports when its destination (a queue
// name, URL or ARN) does not exist, before anything was received: "destination queue
// NAME does not exist; nothing was moved", wrapping err (which matches
// [ErrQueueNotFound]). [Mover.Run] returns it; a front end that resolves a queue name
// first (cmd/sqsworker) reports the same.
func DestinationMissing(destination string, err error) error {
	name := destination
	if i := strings.LastIndexAny(name, "/:"); i >= 0 {
		name = name[i+1:]
	}
	return fmt.Errorf("destination queue %s does not exist; nothing was moved: %w", name, err)
}

func (r *run) report() {
	if r.config.Progress == nil {
		return
	}
	moved := r.result.Moved
	if r.config.DryRun {
		moved = r.result.WouldMove
	}
	r.config.Progress(Progress{
		Received: r.result.Received,
		Moved:    moved,
		Skipped:  r.result.Skipped,
		Left:     len(r.result.TooLarge) + len(r.result.SendFailed),
	})
}

func (r *run) hold(message *sqsworker.Message) {
	if _, ok := r.held[message.ID]; !ok {
		r.heldOrder = append(r.heldOrder, message.ID)
	}
	r.held[message.ID] = message.ReceiptHandle
}

// pace waits so that sends stay at or below RatePerSecond.
func (r *run) pace(ctx context.Context, messages int) error {
	rate := r.config.RatePerSecond
	if rate <= 0 {
		return nil
	}
	now := time.Now()
	if wait := r.nextSend.Sub(now); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("redrive: move stopped: %w", ctx.Err())
		case <-timer.C:
		}
		now = r.nextSend
	}
	r.nextSend = now.Add(time.Duration(float64(messages) / rate * float64(time.Second)))
	return nil
}

// packBatches splits items, in order, into batches of at most maxCount entries whose
// sizes add up to at most maxBytes. Every item must itself be at most maxBytes.
func packBatches(items []*item, maxCount, maxBytes int) [][]*item {
	return sqsx.Chunk(items, maxCount, func(it *item) int { return it.size }, maxBytes)
}
