package claimcheck

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sqsworker/sqsworker"
)

// Defaults of [CleanerConfig].
const (
	// DefaultCleanerQueueSize is CleanerConfig.QueueSize when zero.
	DefaultCleanerQueueSize = 1024
	// DefaultCleanerWorkers is CleanerConfig.Workers when zero.
	DefaultCleanerWorkers = 4
	// DefaultDeleteTimeout is CleanerConfig.DeleteTimeout when zero.
	DefaultDeleteTimeout = 10 * time.Second
	// DefaultMaxTracked is CleanerConfig.MaxTracked when zero.
	DefaultMaxTracked = 10000
)

// lambdaHost is the Event.Host of the Lambda host, whose EventDeleted is not a confirmed
// delete (the event source mapping deletes the record after the function returned).
const lambdaHost = "lambda"

// CleanerConfig configures a [Cleaner]. The zero value is usable.
type CleanerConfig struct {
	// Logger receives failed and dropped deletes (warnings) and deletes done (debug);
	// if nil, logs are discarded.
	Logger *slog.Logger
	// QueueSize bounds the deletes waiting for a worker; if zero, 1024. When it is full
	// a delete is dropped, logged and counted (the object stays, for the bucket's
	// lifecycle rule), so the host is never slowed down.
	QueueSize int
	// Workers is how many DeleteObject calls run at once; if zero, 4.
	Workers int
	// DeleteTimeout bounds one DeleteObject call; if zero, 10 s.
	DeleteTimeout time.Duration
	// MaxTracked bounds the deliveries whose payload the resolver resolved and whose
	// settlement the cleaner has not been told yet (a few per handler slot when the
	// cleaner observes the host); if zero, 10,000. Beyond it a payload is not tracked,
	// and so not deleted (counted as dropped): the bound keeps a cleaner that no host
	// reports to from growing without end.
	MaxTracked int
}

// CleanerStats counts what a [Cleaner] did since it was made.
type CleanerStats struct {
	// Deleted is the number of payload objects deleted (DeleteObject succeeded).
	Deleted int64
	// Failed is the number of DeleteObject calls that failed.
	Failed int64
	// Dropped is the number of deletes not attempted: the queue was full, the cleaner
	// was shut down, or MaxTracked deliveries were already tracked.
	Dropped int64
	// Shared is the number of resolved payloads never deleted because their message
	// carries AttributePayloadShared (other consumers read the same object).
	Shared int64
	// Tracked is the number of deliveries resolved by the resolver whose settlement
	// the host has not reported yet (now, not a count since the start).
	Tracked int
}

// Cleaner deletes a message's S3 payload once the message itself is deleted after its
// handler succeeded. It needs two hooks: a [Resolver] with ResolverConfig.Cleaner set
// tells it which deliveries had their payload resolved and handed to the handler (only
// pointers inside ResolverConfig.Allow get that far), and
// the host tells it, as an [sqsworker.Observer], how each delivery was settled. It
// deletes the payload on the EventDeleted of a delivery the resolver resolved and
// that was not dead-lettered:
//
//   - the poller reports EventDeleted only when SQS confirmed the DeleteMessageBatch
//     entry, so a message whose delete failed (it will be delivered again) keeps its
//     payload;
//   - a dead-lettered message's EventDeadLettered, which comes before its EventDeleted,
//     ends its tracking: the dead-letter queue's copy still points to the object, and so
//     does the message after a redrive;
//   - a pointer marked shared (AttributePayloadShared, set by a store publishing to an
//     SNS topic or with Config.Shared) is never deleted: other consumers of the same
//     fan-out read the same object, and the bucket's lifecycle rule expires it;
//   - a message deleted without its payload being handed to the handler (a delayed job
//     re-sent as a hop by sqsworker.DelayMiddleware, a duplicate suppressed by the
//     idempotency middleware, both placed outside the resolver's) keeps its payload: the hop,
//     or the copy that was handled, still points to it;
//   - on the Lambda host the event source mapping deletes the records after the
//     function returns, and the function never learns whether that delete succeeded, so
//     the cleaner deletes nothing there: the bucket's lifecycle rule expires payloads.
//
// Observe never blocks: it queues the delete for the cleaner's workers, which run until
// [Cleaner.Shutdown].
type Cleaner struct {
	client  S3API
	config  CleanerConfig
	logger  *slog.Logger
	queue   chan cleanup
	workers sync.WaitGroup
	// stopCalls ends DeleteObject calls still running when Shutdown's context ends.
	callContext context.Context
	stopCalls   context.CancelFunc

	mu     sync.RWMutex
	closed bool

	trackedMu sync.Mutex
	tracked   map[delivery]Pointer

	deleted, failed, dropped, shared atomic.Int64
}

// delivery names one receive of a message: its receipt handle, unique per receive.
type delivery struct {
	queueURL, receiptHandle string
}

// cleanup is one queued delete.
type cleanup struct {
	pointer   Pointer
	messageID string
}

// NewCleaner returns a cleaner deleting objects with client (s3:DeleteObject) and
// starts its workers; stop them with [Cleaner.Shutdown]. It panics when client is nil.
func NewCleaner(client S3API, config CleanerConfig) *Cleaner {
	if client == nil {
		panic("claimcheck: NewCleaner: nil S3 client")
	}
	if config.QueueSize <= 0 {
		config.QueueSize = DefaultCleanerQueueSize
	}
	if config.Workers <= 0 {
		config.Workers = DefaultCleanerWorkers
	}
	if config.DeleteTimeout <= 0 {
		config.DeleteTimeout = DefaultDeleteTimeout
	}
	if config.MaxTracked <= 0 {
		config.MaxTracked = DefaultMaxTracked
	}
	logger := config.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cleaner{client: client, config: config, logger: logger, queue: make(chan cleanup, config.QueueSize), tracked: make(map[delivery]Pointer)}
	c.callContext, c.stopCalls = context.WithCancel(context.Background())
	for range config.Workers {
		c.workers.Go(c.work)
	}
	return c
}

// track records that the resolver handed message's payload to the handler; a shared
// pointer is only counted.
func (c *Cleaner) track(ctx context.Context, message *sqsworker.Message, pointer Pointer) {
	if isShared(message) {
		c.shared.Add(1)
		return
	}
	key := delivery{message.QueueURL, message.ReceiptHandle}
	c.trackedMu.Lock()
	full := len(c.tracked) >= c.config.MaxTracked
	if !full {
		c.tracked[key] = pointer
	}
	c.trackedMu.Unlock()
	if full {
		c.drop(ctx, cleanup{pointer: pointer, messageID: message.ID}, "MaxTracked deliveries are already waiting for their settlement; is the cleaner the host's observer?")
	}
}

// settled forgets message's delivery and returns its pointer, if the resolver
// resolved it.
func (c *Cleaner) settled(message *sqsworker.Message) (Pointer, bool) {
	key := delivery{message.QueueURL, message.ReceiptHandle}
	c.trackedMu.Lock()
	defer c.trackedMu.Unlock()
	pointer, ok := c.tracked[key]
	delete(c.tracked, key)
	return pointer, ok
}

// Observe forgets a delivery when it is settled and, for an EventDeleted after
// success on the poller, queues the delete of its payload (see [Cleaner]). Other events
// are ignored.
func (c *Cleaner) Observe(ctx context.Context, ev sqsworker.Event) {
	if ev.Message == nil {
		return
	}
	switch ev.Kind {
	case sqsworker.EventDeleted, sqsworker.EventDeleteFailed, sqsworker.EventRescheduled,
		sqsworker.EventRescheduleFailed, sqsworker.EventReleased,
		// A dead-lettered message's EventDeleted follows; the delivery is forgotten
		// now, so that delete never deletes the payload the dead-letter queue's copy
		// points to, whatever Outcome that event carries.
		sqsworker.EventDeadLettered:
	default:
		return // not the end of the delivery
	}
	pointer, ok := c.settled(ev.Message)
	if !ok || ev.Kind != sqsworker.EventDeleted || ev.Outcome.Kind != sqsworker.OutcomeDelete || ev.Host == lambdaHost {
		return
	}
	job := cleanup{pointer: pointer, messageID: ev.Message.ID}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		c.drop(ctx, job, "the cleaner is shut down")
		return
	}
	select {
	case c.queue <- job:
	default:
		c.drop(ctx, job, "the cleaner's queue is full")
	}
}

func (c *Cleaner) drop(ctx context.Context, job cleanup, why string) {
	c.dropped.Add(1)
	c.logger.LogAttrs(ctx, slog.LevelWarn, "claimcheck: payload not deleted ("+why+"); the bucket's lifecycle rule must expire it",
		slog.String("message_id", job.messageID), slog.String("payload", job.pointer.String()))
}

func (c *Cleaner) work() {
	for job := range c.queue {
		c.delete(job)
	}
}

// delete deletes one payload. S3's DeleteObject succeeds for a key already gone, so a
// second delete of the same payload is harmless.
func (c *Cleaner) delete(job cleanup) {
	ctx, cancel := context.WithTimeout(c.callContext, c.config.DeleteTimeout)
	defer cancel()
	_, err := c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(job.pointer.Bucket), Key: aws.String(job.pointer.Key)})
	if err != nil {
		c.failed.Add(1)
		c.logger.LogAttrs(ctx, slog.LevelWarn, "claimcheck: deleting the payload of a deleted message failed; the bucket's lifecycle rule must expire it",
			slog.String("message_id", job.messageID), slog.String("payload", job.pointer.String()), slog.Any("error", err))
		return
	}
	c.deleted.Add(1)
	c.logger.LogAttrs(ctx, slog.LevelDebug, "claimcheck: payload deleted",
		slog.String("message_id", job.messageID), slog.String("payload", job.pointer.String()))
}

// Shutdown stops taking deletes (later ones are dropped and counted) and waits until the
// queued deletes are done, or ctx ends: then it cancels the calls still running, waits
// for the workers and returns an error naming how many deletes were left. Call it after
// the hosts that report to the cleaner have stopped. Calling it again returns nil at
// once.
func (c *Cleaner) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.queue)
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		c.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
		c.stopCalls()
		return nil
	case <-ctx.Done():
	}
	left := len(c.queue)
	c.stopCalls()
	for range c.queue {
		c.dropped.Add(1) // drained unattempted; the workers stop after their current call
	}
	<-done
	return fmt.Errorf("claimcheck: cleaner shut down with about %d payload deletes not done: %w", left, context.Cause(ctx))
}

// Stats returns what the cleaner did so far.
func (c *Cleaner) Stats() CleanerStats {
	c.trackedMu.Lock()
	tracked := len(c.tracked)
	c.trackedMu.Unlock()
	return CleanerStats{Deleted: c.deleted.Load(), Failed: c.failed.Load(), Dropped: c.dropped.Load(), Shared: c.shared.Load(), Tracked: tracked}
}
