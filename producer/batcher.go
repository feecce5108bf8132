package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Defaults for [BatcherConfig].
const (
	// DefaultBatchWindow is how long a batch stays open for more jobs after its first.
	DefaultBatchWindow = 20 * time.Millisecond
	// DefaultBatchesInFlight is how many SendMessageBatch calls run at once.
	DefaultBatchesInFlight = 16
)

// ErrBatcherClosed is returned by [Batcher.Send] after [Batcher.Close].
var ErrBatcherClosed = errors.New("producer: batcher closed")

// BatcherConfig configures a [Batcher].
type BatcherConfig struct {
	// Window is how long a batch waits for more jobs after its first one before it is
	// sent; a batch is sent at once when it has 10 entries or the next job would take it
	// past 1 MiB. If zero, DefaultBatchWindow (20 ms): a lone Send takes that much longer.
	Window time.Duration
	// InFlight is how many SendMessageBatch calls may run at once; further batches wait
	// (and so do their senders). If zero, DefaultBatchesInFlight (16).
	InFlight int
}

// Batcher merges concurrent sends to one queue into SendMessageBatch calls, like the
// AWS SDK for Java's SqsAsyncBatchManager: each [Batcher.Send] waits for its own job's
// result. It owns one goroutine, which [Batcher.Close] stops.
type Batcher struct {
	producer *Producer
	queueURL string
	window   time.Duration

	requests chan *request
	closing  chan struct{}
	stopped  chan struct{}
	slots    chan struct{}
	calls    sync.WaitGroup
	ctx      context.Context // of the batch calls; cancelled when Close gives up
	cancel   context.CancelFunc
	once     sync.Once
}

// request is one job waiting in the batcher.
type request struct {
	message *outMessage
	result  chan sendResult
}

// NewBatcher starts a batcher for queueURL that sends through p.
func (p *Producer) NewBatcher(queueURL string, config BatcherConfig) (*Batcher, error) {
	if config.Window < 0 || config.InFlight < 0 {
		return nil, fmt.Errorf("producer: BatcherConfig.Window (%s) and InFlight (%d) must not be negative", config.Window, config.InFlight)
	}
	if config.Window == 0 {
		config.Window = DefaultBatchWindow
	}
	if config.InFlight == 0 {
		config.InFlight = DefaultBatchesInFlight
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher{
		producer: p,
		queueURL: queueURL,
		window:   config.Window,
		requests: make(chan *request),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
		slots:    make(chan struct{}, config.InFlight),
		ctx:      ctx,
		cancel:   cancel,
	}
	go b.run()
	return b, nil
}

// Send sends job through the next batch and returns its message id, with the same
// checks and errors as [Producer.Send]. ctx bounds the preparation and the wait for a
// place in a batch; once the job is in a batch, Send waits for SQS's answer to that
// batch whatever ctx does, so it always reports what happened to its job.
func (b *Batcher) Send(ctx context.Context, job Job) (string, error) {
	out, err := b.producer.prepare(ctx, b.queueURL, job)
	if err != nil {
		return "", err
	}
	r := &request{message: out.message, result: make(chan sendResult, 1)}
	select {
	case b.requests <- r:
	case <-b.closing:
		return b.producer.finish(ctx, out, sendResult{err: ErrBatcherClosed})
	case <-ctx.Done():
		return b.producer.finish(ctx, out, sendResult{err: ctx.Err()})
	}
	return b.producer.finish(ctx, out, <-r.result)
}

// Close stops taking jobs, sends the open batch and waits for every batch in flight.
// When ctx ends first, it cancels the calls still running (their senders get the
// cancellation) and returns ctx's error. Close is idempotent.
func (b *Batcher) Close(ctx context.Context) error {
	b.once.Do(func() { close(b.closing) })
	<-b.stopped
	done := make(chan struct{})
	go func() { // ends when the calls do, which the cancel below bounds
		b.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
		b.cancel()
		return nil
	case <-ctx.Done():
		b.cancel()
		<-done
		return ctx.Err()
	}
}

// run collects requests into batches until Close; it owns the open batch.
func (b *Batcher) run() {
	defer close(b.stopped)
	var open []*request
	openBytes := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		timer.Stop()
		if len(open) == 0 {
			return
		}
		batch := open
		open, openBytes = nil, 0
		b.slots <- struct{}{}
		b.calls.Go(func() {
			defer func() { <-b.slots }()
			b.send(batch)
		})
	}
	for {
		select {
		case r := <-b.requests:
			if len(open) > 0 && openBytes+r.message.size > sqsinfo.MaxBatchBytes {
				flush()
			}
			open = append(open, r)
			openBytes += r.message.size
			if len(open) == 1 {
				timer.Reset(b.window)
			}
			if len(open) == sqsinfo.MaxBatchEntries {
				flush()
			}
		case <-timer.C:
			flush()
		case <-b.closing:
			flush()
			return
		}
	}
}

// send makes one batch call and hands each request its result.
func (b *Batcher) send(batch []*request) {
	messages := make([]*outMessage, len(batch))
	for i, r := range batch {
		messages[i] = r.message
	}
	for i, result := range b.producer.sendBatch(b.ctx, b.queueURL, messages) {
		batch[i].result <- result
	}
}
