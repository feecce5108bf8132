package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// Defaults for [Config].
const (
	defaultVisibilityTimeout = 60 * time.Second
	defaultWaitTime          = time.Second
	defaultSendAttempts      = 3
	defaultRetryDelay        = 200 * time.Millisecond
	// maxVisibilityTimeout and maxWaitTime are SQS's limits for ReceiveMessage.
	maxVisibilityTimeout = 12 * time.Hour
	maxWaitTime          = 20 * time.Second
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
	// has not seen yet and SQS counts no visible message in the source (or after three
	// such receives in a row while it still counts some: see Result.Warnings).
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
	// Received counts distinct messages received from the source.
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
	// Received counts distinct messages received from the source.
	Received int `json:"received"`
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

// Mover moves messages from one queue to another on the client side: it receives a
// batch, sends the selected messages to the destination with SendMessageBatch and,
// only for the entries SQS confirmed, deletes them from the source. A crash can
// therefore duplicate a message (present in both queues) but never lose one.
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
	if c.VisibilityTimeout < time.Second || c.VisibilityTimeout > maxVisibilityTimeout {
		problems = append(problems, fmt.Errorf("redrive: VisibilityTimeout %s is outside 1s to 12h", c.VisibilityTimeout))
	}
	if c.WaitTime < 0 || c.WaitTime > maxWaitTime {
		problems = append(problems, fmt.Errorf("redrive: WaitTime %s is outside 0 to 20s", c.WaitTime))
	}
	if c.SendAttempts < 0 {
		problems = append(problems, fmt.Errorf("redrive: SendAttempts %d is negative", c.SendAttempts))
	}
	return errors.Join(problems...)
}

// AttributeRedriveCount is the message attribute (Number) a [Mover] adds to each message
// it moves: how many times the tool moved it, 1 on its first move (the value it carried
// plus one). A message that already has 10 message attributes (the SQS maximum), or that
// the attribute would make larger than the destination allows, moves unchanged, and the
// count goes to the log (Info) only.
const AttributeRedriveCount = "x-redrive-count"

// maxMessageAttributes is SQS's limit of message attributes per message.
const maxMessageAttributes = 10

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
	dest      *sqsworker.Queue
	maxBytes  int
	maxCount  int
	seen      map[string]bool
	held      map[string]string // message id -> latest receipt handle, released at the end
	heldOrder []string
	reordered map[string][]string // FIFO group -> ids re-enqueued at the end of it
	nextSend  time.Time
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
		maxCount:  MaxBatchEntries,
	}
	if _, err := loadQueue(ctx, m.api, m.config.Source); err != nil {
		return r.result, err
	}
	// The destination is checked before anything is received (CASES.md N11 (d)).
	if r.dest, err = loadQueue(ctx, m.api, m.config.Destination); err != nil {
		if errors.Is(err, ErrQueueNotFound) {
			return r.result, DestinationMissing(m.config.Destination, err)
		}
		return r.result, err
	}
	r.maxBytes = r.dest.MaximumMessageSize
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultMaximumMessageSize
	}
	r.maxBytes = min(r.maxBytes, MaxMessageSize)
	r.result.MaxBatchBytes = r.maxBytes
	if rate := m.config.RatePerSecond; rate > 0 && rate < MaxBatchEntries {
		r.maxCount = max(1, int(rate))
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
		count := MaxBatchEntries
		if limit > 0 && r.config.Filter == nil {
			count = min(count, limit-r.result.Matched)
		}
		output, err := r.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(r.config.Source),
			MaxNumberOfMessages:         int32(count),
			VisibilityTimeout:           int32(r.config.VisibilityTimeout / time.Second),
			WaitTimeSeconds:             int32(r.config.WaitTime / time.Second),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return fmt.Errorf("redrive: receiving from %s: %w", r.config.Source, err)
		}
		fresh := 0
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
			fresh++
			r.result.Received++
			message := convertMessage(r.config.Source, raw)
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
			size := MessageSize(message)
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
			attributes, sendSize := r.withRedriveCount(raw, message, size)
			selected = append(selected, &item{raw: raw, message: message, size: sendSize, attributes: attributes})
		}
		if fresh == 0 {
			// An empty answer can be false (seen on the emulator under load; short polls
			// on AWS): believe it only when SQS also counts no visible message.
			visible, err := r.visibleCount(ctx)
			if err != nil {
				return err
			}
			if visible == 0 {
				return nil
			}
			if empty++; empty >= maxEmptyReceives {
				r.warn(fmt.Sprintf("stopped after %d receives returned no new message while SQS still counted %d visible in %s; run again to move the rest",
					empty, visible, r.config.Source))
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

// withRedriveCount returns the message attributes to send for raw, with
// AttributeRedriveCount set to one more than it was, and the message's size with them;
// or raw's own attributes and size, logging the count, when the attribute would be an
// 11th or would make the message larger than the destination allows.
func (r *run) withRedriveCount(raw types.Message, message *sqsworker.Message, size int) (map[string]types.MessageAttributeValue, int) {
	previous, present := raw.MessageAttributes[AttributeRedriveCount]
	count, _ := strconv.Atoi(aws.ToString(previous.StringValue))
	value := strconv.Itoa(count + 1)
	newSize := size + len(AttributeRedriveCount) + len("Number") + len(value)
	if present {
		newSize -= len(AttributeRedriveCount) + len(aws.ToString(previous.DataType)) + len(aws.ToString(previous.StringValue)) + len(previous.BinaryValue)
	}
	reason := ""
	switch {
	case !present && len(raw.MessageAttributes) >= maxMessageAttributes:
		reason = "the message already has 10 message attributes, the SQS maximum"
	case newSize > r.maxBytes:
		reason = "the attribute would make the message larger than the destination's MaximumMessageSize"
	}
	if reason != "" {
		r.config.Logger.Info("redrive: moved without "+AttributeRedriveCount+": "+reason,
			"message_id", message.ID, "redrive_count", count+1)
		return raw.MessageAttributes, size
	}
	attributes := make(map[string]types.MessageAttributeValue, len(raw.MessageAttributes)+1)
	for name, attribute := range raw.MessageAttributes {
		attributes[name] = attribute
	}
	attributes[AttributeRedriveCount] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(value)}
	return attributes, newSize
}

// visibleCount reads the source's ApproximateNumberOfMessages (visible messages).
func (r *run) visibleCount(ctx context.Context) (int, error) {
	output, err := r.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(r.config.Source),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, fmt.Errorf("redrive: reading the message count of %s: %w", r.config.Source, err)
	}
	visible, _ := strconv.Atoi(output.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	return visible, nil
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
	var batches [][]*item
	var current []*item
	bytes := 0
	for _, it := range items {
		if len(current) > 0 && (len(current) == maxCount || bytes+it.size > maxBytes) {
			batches = append(batches, current)
			current, bytes = nil, 0
		}
		current = append(current, it)
		bytes += it.size
	}
	if len(current) > 0 {
		batches = append(batches, current)
	}
	return batches
}

// moveBatch sends batch, retries failed entries alone, then deletes the confirmed ones.
func (r *run) moveBatch(ctx context.Context, batch []*item) error {
	confirmed, err := r.send(ctx, batch)
	if err != nil {
		return err
	}
	if len(confirmed) == 0 {
		return nil
	}
	return r.delete(ctx, confirmed)
}

// send sends batch and returns the items SQS confirmed. Items that fail on every
// attempt are recorded in SendFailed and held (released at the end, so they stay in
// the source). A failed request is returned as an error; its items are held too.
func (r *run) send(ctx context.Context, batch []*item) ([]*item, error) {
	confirmed, failed, err := r.sendOnce(ctx, batch)
	if err != nil {
		for _, it := range batch {
			r.hold(it.message)
		}
		return nil, err
	}
	for _, failure := range failed {
		it, entry := failure.item, failure.entry
		delay := r.config.RetryDelay
		for attempt := 2; !entry.SenderFault && attempt <= r.config.SendAttempts; attempt++ {
			if err := sleep(ctx, delay); err != nil {
				r.hold(it.message)
				return confirmed, fmt.Errorf("redrive: move stopped: %w", err)
			}
			delay *= 2
			ok, again, err := r.sendOnce(ctx, []*item{it})
			if err != nil {
				r.hold(it.message)
				return confirmed, err
			}
			if len(ok) == 1 {
				entry = types.BatchResultErrorEntry{}
				confirmed = append(confirmed, it)
				break
			}
			entry = again[0].entry
		}
		if entry.Code != nil {
			text := fmt.Sprintf("%s: %s", aws.ToString(entry.Code), aws.ToString(entry.Message))
			r.result.SendFailed = append(r.result.SendFailed, MessageError{ID: it.message.ID, Error: text})
			r.config.Logger.Warn("redrive: send failed; message left in the source", "message_id", it.message.ID, "error", text)
			r.hold(it.message)
		}
	}
	return confirmed, nil
}

type entryFailure struct {
	item  *item
	entry types.BatchResultErrorEntry
}

// sendOnce sends one SendMessageBatch request.
func (r *run) sendOnce(ctx context.Context, batch []*item) (confirmed []*item, failed []entryFailure, err error) {
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, it := range batch {
		entries[i] = r.entry("m"+strconv.Itoa(i), it)
	}
	r.result.Batches++
	output, err := r.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(r.config.Destination),
		Entries:  entries,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("redrive: sending %d messages to %s: %w", len(batch), r.config.Destination, err)
	}
	results := make(map[string]*types.BatchResultErrorEntry, len(batch))
	for _, ok := range output.Successful {
		results[aws.ToString(ok.Id)] = nil
	}
	for i := range output.Failed {
		results[aws.ToString(output.Failed[i].Id)] = &output.Failed[i]
	}
	for i, it := range batch {
		id := "m" + strconv.Itoa(i)
		entry, answered := results[id]
		switch {
		case !answered:
			// In neither list: not confirmed, so never deleted; retried like a failure.
			failed = append(failed, entryFailure{item: it, entry: types.BatchResultErrorEntry{
				Id: aws.String(id), Code: aws.String("MissingResult"), Message: aws.String("SQS returned no result for the entry"),
			}})
		case entry == nil:
			confirmed = append(confirmed, it)
		default:
			failed = append(failed, entryFailure{item: it, entry: *entry})
		}
	}
	return confirmed, failed, nil
}

// entry builds the send entry for it: body and message attributes unchanged, plus
// AttributeRedriveCount when it fits; on a FIFO destination the message group kept and
// a new deduplication id.
func (r *run) entry(id string, it *item) types.SendMessageBatchRequestEntry {
	entry := types.SendMessageBatchRequestEntry{
		Id:                aws.String(id),
		MessageBody:       it.raw.Body,
		MessageAttributes: it.attributes,
	}
	if r.dest.FIFO {
		group := groupOf(it.message)
		original := it.message.DeduplicationID
		if original == "" {
			original = it.message.ID
		}
		entry.MessageGroupId = aws.String(group)
		entry.MessageDeduplicationId = aws.String(NextDeduplicationID(original))
	}
	return entry
}

// delete deletes confirmed items from the source. Entries that fail are retried alone;
// those that still fail are recorded in NotDeleted (they are now in both queues). A
// failed request is returned as an error.
func (r *run) delete(ctx context.Context, items []*item) error {
	failed, err := r.deleteOnce(ctx, items)
	if err != nil {
		for _, it := range items {
			r.result.NotDeleted = append(r.result.NotDeleted, MessageError{ID: it.message.ID, Error: err.Error()})
		}
		return err
	}
	for _, it := range items {
		text := failed[it]
		delay := r.config.RetryDelay
		for attempt := 2; text != "" && attempt <= r.config.SendAttempts; attempt++ {
			if sleep(ctx, delay) != nil {
				break
			}
			delay *= 2
			again, err := r.deleteOnce(ctx, []*item{it})
			if err != nil {
				break
			}
			text = again[it]
		}
		if text != "" {
			r.result.NotDeleted = append(r.result.NotDeleted, MessageError{ID: it.message.ID, Error: text})
			r.config.Logger.Warn("redrive: message sent but not deleted from the source; it is now in both queues",
				"message_id", it.message.ID, "error", text)
			continue
		}
		r.result.Moved++
		if r.dest.FIFO {
			group := groupOf(it.message)
			r.reordered[group] = append(r.reordered[group], it.message.ID)
		}
	}
	return nil
}

// groupOf returns the message group a message is sent to on a FIFO destination: its
// own group, or, coming from a standard queue, a group of its own (its message id).
func groupOf(message *sqsworker.Message) string {
	if message.GroupID != "" {
		return message.GroupID
	}
	return message.ID
}

// deleteOnce sends one DeleteMessageBatch request and returns the failed items with
// their error text.
func (r *run) deleteOnce(ctx context.Context, items []*item) (map[*item]string, error) {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(items))
	byID := make(map[string]*item, len(items))
	for i, it := range items {
		id := "m" + strconv.Itoa(i)
		byID[id] = it
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: it.raw.ReceiptHandle}
	}
	output, err := r.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(r.config.Source),
		Entries:  entries,
	})
	if err != nil {
		return nil, fmt.Errorf("redrive: deleting %d moved messages from %s: %w", len(items), r.config.Source, err)
	}
	failed := map[*item]string{}
	for _, entry := range output.Failed {
		if it := byID[aws.ToString(entry.Id)]; it != nil {
			failed[it] = fmt.Sprintf("%s: %s", aws.ToString(entry.Code), aws.ToString(entry.Message))
		}
	}
	return failed, nil
}

// release makes every held message visible again at once (visibility 0).
func (r *run) release(ctx context.Context) error {
	if len(r.heldOrder) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	handles := make([]string, 0, len(r.heldOrder))
	for _, id := range r.heldOrder {
		handles = append(handles, r.held[id])
	}
	failed, err := releaseMessages(ctx, r.api, r.config.Source, handles)
	if err != nil || failed > 0 {
		return fmt.Errorf("redrive: %d of %d messages left in %s could not be released and stay hidden for up to %s: %v",
			failed, len(handles), r.config.Source, r.config.VisibilityTimeout, err)
	}
	return nil
}

type visibilityAPI interface {
	ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// releaseMessages sets the visibility of the receipt handles to 0, ten at a time, and
// returns how many failed (with the first request error).
func releaseMessages(ctx context.Context, api visibilityAPI, queueURL string, handles []string) (failed int, err error) {
	for start := 0; start < len(handles); start += MaxBatchEntries {
		chunk := handles[start:min(start+MaxBatchEntries, len(handles))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, handle := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String("m" + strconv.Itoa(i)), ReceiptHandle: aws.String(handle), VisibilityTimeout: 0,
			}
		}
		output, requestErr := api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(queueURL),
			Entries:  entries,
		})
		if requestErr != nil {
			failed += len(chunk)
			if err == nil {
				err = requestErr
			}
			continue
		}
		failed += len(output.Failed)
	}
	return failed, err
}

// warnReordered adds one warning per FIFO group whose order the move changed.
func (r *run) warnReordered() {
	groups := make([]string, 0, len(r.reordered))
	for group := range r.reordered {
		groups = append(groups, group)
	}
	sort.Strings(groups)
	for _, group := range groups {
		ids := r.reordered[group]
		shown := ids
		if len(shown) > 5 {
			shown = shown[:5]
		}
		more := ""
		if len(ids) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
		}
		r.warn(fmt.Sprintf("FIFO order changed in group %q: message %s%s re-enqueued at the end of the group in %s; "+
			"it is now ordered after the messages of that group sent after it (those processed while it was in the dead-letter queue)",
			group, strings.Join(shown, ", "), more, r.config.Destination))
	}
}

func (r *run) warn(text string) {
	r.result.Warnings = append(r.result.Warnings, text)
	r.config.Logger.Warn("redrive: " + text)
}

func sleep(ctx context.Context, delay time.Duration) error {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
