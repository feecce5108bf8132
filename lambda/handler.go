package lambda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker"
)

// Errors a [*BatchError] wraps, one per reason the adapter fails a whole invocation.
var (
	// ErrEntireBatchFailed: every record failed and WithEntireBatchFailureError(true) is set.
	ErrEntireBatchFailed = errors.New("lambda: every record of the batch failed")
	// ErrUnidentifiedFailure: a record failed but has no message id to report it by.
	// Lambda treats an empty or unknown itemIdentifier as a failure of the whole batch
	// anyway; the adapter says so with an error instead of emitting one.
	ErrUnidentifiedFailure = errors.New("lambda: a failed record has no message id to report it by")
	// ErrBatchItemFailuresNotReported: records failed and WithReportBatchItemFailures(false)
	// is set, so the failure can only be reported for the whole invocation.
	ErrBatchItemFailuresNotReported = errors.New("lambda: records failed and the event source mapping does not report batch item failures")
)

// BatchError is the error the batch handler returns when it fails the whole invocation.
// Lambda then deletes no record of the batch. The Lambda runtime reports it with
// errorType "BatchError".
type BatchError struct {
	// Err is ErrEntireBatchFailed, ErrUnidentifiedFailure or ErrBatchItemFailuresNotReported.
	Err error
	// Failed is how many records failed, out of Total.
	Failed, Total int
}

// Error returns Err's text with the counts.
func (e *BatchError) Error() string {
	return fmt.Sprintf("%v (%d of %d records failed)", e.Err, e.Failed, e.Total)
}

// Unwrap returns Err.
func (e *BatchError) Unwrap() error { return e.Err }

// maxBatchEntries is SQS's limit of entries per batch request.
const maxBatchEntries = 10

// NewBatchHandler returns the function to pass to aws-lambda-go's lambda.Start for an
// SQS event source mapping. It handles every record with handler and returns the records
// that failed in batchItemFailures, by message id; when none failed the response is
// {"batchItemFailures":[]}. See the package documentation for the outcome rules and the
// options for concurrency, FIFO ordering and the deadline budget.
//
// It panics when handler is nil.
func NewBatchHandler(handler sqsworker.Handler, options ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	if handler == nil {
		panic("lambda: NewBatchHandler: nil handler")
	}
	cfg := newConfig(options)
	b := &batchHandler{handler: handler, cfg: cfg, client: cfg.client, queues: make(map[string]*queueLoad)}
	return b.handle
}

type batchHandler struct {
	handler sqsworker.Handler
	cfg     config

	clientMu sync.Mutex
	client   SQSAPI

	// queues caches LoadQueue per queue URL for the life of the execution environment, so
	// the redrive policy is read once per cold start. queuesMu guards the map only; it is
	// never held across a call to SQS (see queue).
	queuesMu sync.Mutex
	queues   map[string]*queueLoad
}

// queueLoad is one LoadQueue call shared by the invocations that need the same queue at
// the same time. done is closed when queue and err are set.
type queueLoad struct {
	done  chan struct{}
	queue *sqsworker.Queue
	err   error
}

// queueLoadTimeout bounds a shared LoadQueue call (GetQueueAttributes and GetQueueUrl).
// The call does not end with the invocation that started it, since other invocations may
// be waiting for it; each waiter stops waiting at its own deadline.
const queueLoadTimeout = 10 * time.Second

// record is one record of the invocation and what became of it.
type record struct {
	index   int
	event   *events.SQSMessage
	message *sqsworker.Message
	// failed: reported in batchItemFailures, after its visibility is set to visibility.
	failed     bool
	visibility time.Duration
}

func (b *batchHandler) handle(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	storage := make([]record, len(event.Records))
	records := make([]*record, len(event.Records))
	lastARN, lastURL := "", ""
	for i := range event.Records {
		source := &event.Records[i]
		if source.EventSourceARN != lastARN {
			lastARN, lastURL = source.EventSourceARN, queueURLFromARN(source.EventSourceARN)
		}
		storage[i] = record{index: i, event: source, message: toMessage(source, lastURL)}
		records[i] = &storage[i]
	}
	fifo := isFIFO(event.Records)
	plan := newBudget(ctx, b.cfg.deadlineMargin)
	handlerCtx, cancel := plan.handlerContext(ctx) // one deadline for every record
	b.run(ctx, handlerCtx, plan, sequences(records, fifo, b.cfg.fifoMode), skipReason(fifo, b.cfg.fifoMode))
	cancel()
	b.changeVisibility(ctx, records)
	return b.respond(ctx, records)
}

// run handles the sequences with at most cfg.concurrency of them at once. Inside a
// sequence records run in order; a record that fails or cannot start skips the rest.
// Handlers get handlerCtx; settling uses the invocation's ctx.
func (b *batchHandler) run(ctx, handlerCtx context.Context, plan budget, units [][]*record, skipped string) {
	runSequence := func(sequence []*record) {
		for i, r := range sequence {
			if !b.process(ctx, handlerCtx, plan, r) {
				for _, rest := range sequence[i+1:] {
					b.skip(ctx, rest, skipped)
				}
				return
			}
		}
	}
	workers := min(b.cfg.concurrency, len(units))
	if workers <= 1 {
		for _, sequence := range units {
			runSequence(sequence)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(units) {
					return
				}
				runSequence(units[i])
			}
		})
	}
	wg.Wait()
}

// process handles one record if the budget allows and settles its outcome. It reports
// whether the record succeeded (deleted or dead-lettered).
func (b *batchHandler) process(ctx, handlerCtx context.Context, plan budget, r *record) bool {
	if !plan.canStart(time.Now()) {
		b.skip(ctx, r, "too little time left before the invocation's deadline")
		return false
	}
	err := sqsworker.CallHandler(handlerCtx, b.handler, r.message)
	b.settle(ctx, r, sqsworker.Classify(err))
	return !r.failed
}

// skip reports a record failed without handling it; it becomes visible again at once.
func (b *batchHandler) skip(ctx context.Context, r *record, reason string) {
	r.failed, r.visibility = true, 0
	b.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "lambda: record not handled, reported as failed",
		append(b.recordAttrs(ctx, r), slog.String("reason", reason))...)
}

// settle applies the outcome rules to a handled record.
func (b *batchHandler) settle(ctx context.Context, r *record, outcome sqsworker.Outcome) {
	message := r.message
	sinceFirstReceive := message.SinceFirstReceive(time.Now())
	switch outcome.Kind {
	case sqsworker.OutcomeDelete:
		return
	case sqsworker.OutcomeDeadLetter:
		err := b.deadLetter(ctx, message, outcome)
		if err == nil {
			b.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "lambda: record sent to the dead-letter queue",
				append(b.recordAttrs(ctx, r), slog.String("reason", outcome.Reason), slog.Any("error", outcome.Err))...)
			return
		}
		r.failed, r.visibility = true, b.cfg.backoff.Delay(message.ReceiveCount, sinceFirstReceive)
		b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: dead-letter send failed; record reported as failed",
			append(b.recordAttrs(ctx, r), slog.String("reason", outcome.Reason), slog.Any("error", outcome.Err),
				slog.Any("send_error", err), slog.Int("visibility_seconds", int(sqsworker.VisibilitySeconds(r.visibility))))...)
		return
	case sqsworker.OutcomeRetryAfter, sqsworker.OutcomeDefer:
		r.failed, r.visibility = true, sqsworker.ClampVisibility(outcome.Delay, sinceFirstReceive)
	default:
		r.failed, r.visibility = true, b.cfg.backoff.Delay(message.ReceiveCount, sinceFirstReceive)
	}
	level := slog.LevelWarn
	if outcome.Kind == sqsworker.OutcomeDefer {
		level = slog.LevelInfo
	}
	b.cfg.logger.LogAttrs(ctx, level, "lambda: record failed",
		append(b.recordAttrs(ctx, r), slog.String("outcome", outcome.Kind.String()), slog.String("reason", outcome.Reason),
			slog.Any("error", outcome.Err), slog.Int("visibility_seconds", int(sqsworker.VisibilitySeconds(r.visibility))))...)
}

// deadLetter sends the message to its queue's dead-letter queue.
func (b *batchHandler) deadLetter(ctx context.Context, message *sqsworker.Message, outcome sqsworker.Outcome) error {
	client, err := b.sqsClient(ctx)
	if err != nil {
		return err
	}
	queue, err := b.queue(ctx, client, message.QueueURL)
	if err != nil {
		return err
	}
	return sqsworker.SendToDeadLetterQueue(ctx, client, queue, message, outcome)
}

// changeVisibility sets every failed record's visibility timeout to its delay, in batches
// of ten per queue. A failed change is logged; the record is still reported failed and
// comes back after the queue's visibility timeout instead.
func (b *batchHandler) changeVisibility(ctx context.Context, records []*record) {
	b.batchByQueue(ctx, records, func(r *record) bool { return r.failed }, "ChangeMessageVisibilityBatch",
		func(client SQSAPI, queueURL string, batch []*record) ([]types.BatchResultErrorEntry, error) {
			entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
			for i, r := range batch {
				entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
					Id:                aws.String(strconv.Itoa(r.index)),
					ReceiptHandle:     aws.String(r.message.ReceiptHandle),
					VisibilityTimeout: sqsworker.VisibilitySeconds(r.visibility),
				}
			}
			output, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
			if err != nil {
				return nil, err
			}
			return output.Failed, nil
		})
}

// deleteSucceeded deletes the records that succeeded, for a mapping that does not report
// batch item failures and so will delete none of them after an invocation error.
func (b *batchHandler) deleteSucceeded(ctx context.Context, records []*record) {
	b.batchByQueue(ctx, records, func(r *record) bool { return !r.failed }, "DeleteMessageBatch",
		func(client SQSAPI, queueURL string, batch []*record) ([]types.BatchResultErrorEntry, error) {
			entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
			for i, r := range batch {
				entries[i] = types.DeleteMessageBatchRequestEntry{
					Id:            aws.String(strconv.Itoa(r.index)),
					ReceiptHandle: aws.String(r.message.ReceiptHandle),
				}
			}
			output, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
			if err != nil {
				return nil, err
			}
			return output.Failed, nil
		})
}

// batchByQueue calls send for the selected records, grouped by queue URL in batches of
// at most ten, and logs failed calls and failed entries (entry ids are record indexes).
func (b *batchHandler) batchByQueue(ctx context.Context, records []*record, selected func(*record) bool, operation string,
	send func(client SQSAPI, queueURL string, batch []*record) ([]types.BatchResultErrorEntry, error)) {
	var byQueue map[string][]*record
	var order []string
	for _, r := range records {
		if !selected(r) {
			continue
		}
		if byQueue == nil {
			byQueue = make(map[string][]*record)
		}
		url := r.message.QueueURL
		if _, ok := byQueue[url]; !ok {
			order = append(order, url)
		}
		byQueue[url] = append(byQueue[url], r)
	}
	if len(order) == 0 {
		return
	}
	client, err := b.sqsClient(ctx)
	if err != nil {
		b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" not sent", append(requestAttrs(ctx), slog.Any("error", err))...)
		return
	}
	for _, url := range order {
		pending := byQueue[url]
		if url == "" {
			for _, r := range pending {
				b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" not sent: no queue URL for the record's eventSourceARN",
					append(b.recordAttrs(ctx, r), slog.String("event_source_arn", r.event.EventSourceARN))...)
			}
			continue
		}
		for len(pending) > 0 {
			batch := pending[:min(maxBatchEntries, len(pending))]
			pending = pending[len(batch):]
			failed, err := send(client, url, batch)
			if err != nil {
				b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" failed",
					append(requestAttrs(ctx), slog.String("queue", url), slog.Int("entries", len(batch)), slog.Any("error", err))...)
				continue
			}
			for _, entry := range failed {
				index, _ := strconv.Atoi(aws.ToString(entry.Id))
				attrs := append(requestAttrs(ctx), slog.String("queue", url), slog.String("code", aws.ToString(entry.Code)),
					slog.String("error", aws.ToString(entry.Message)), slog.Bool("sender_fault", entry.SenderFault))
				if index >= 0 && index < len(records) {
					attrs = append(attrs, slog.String("message_id", records[index].message.ID))
				}
				b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" entry failed", attrs...)
			}
		}
	}
}

// respond builds the partial batch response, or the invocation error.
func (b *batchHandler) respond(ctx context.Context, records []*record) (events.SQSEventResponse, error) {
	failures := make([]events.SQSBatchItemFailure, 0) // never null: {"batchItemFailures":[]}
	failed, unidentified := 0, 0
	for _, r := range records {
		if !r.failed {
			continue
		}
		failed++
		if r.message.ID == "" {
			unidentified++
			continue
		}
		failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: r.message.ID})
	}
	response := events.SQSEventResponse{BatchItemFailures: failures}
	var reason error
	switch {
	case unidentified > 0:
		reason = ErrUnidentifiedFailure
	case failed > 0 && !b.cfg.reportBatchItemFailures:
		reason = ErrBatchItemFailuresNotReported
	case failed > 0 && failed == len(records) && b.cfg.entireBatchFailureError:
		reason = ErrEntireBatchFailed
	default:
		return response, nil
	}
	if !b.cfg.reportBatchItemFailures {
		b.deleteSucceeded(ctx, records)
	}
	err := &BatchError{Err: reason, Failed: failed, Total: len(records)}
	b.cfg.logger.LogAttrs(ctx, slog.LevelError, "lambda: failing the whole invocation", append(requestAttrs(ctx), slog.Any("error", err))...)
	return response, err
}

// sqsClient returns the configured client, or makes one from the default AWS
// configuration on first use. A failure is not cached: the next call tries again.
func (b *batchHandler) sqsClient(ctx context.Context) (SQSAPI, error) {
	b.clientMu.Lock()
	defer b.clientMu.Unlock()
	if b.client == nil {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("lambda: loading the AWS configuration: %w", err)
		}
		b.client = sqs.NewFromConfig(cfg)
	}
	return b.client, nil
}

// queue returns the queue's description (with its dead-letter queue), loading it on
// first use. Concurrent invocations (Lambda Managed Instances run several in one process)
// share one load; each waits at most until its own ctx ends. A failure is not cached: the
// next call loads again.
func (b *batchHandler) queue(ctx context.Context, client SQSAPI, url string) (*sqsworker.Queue, error) {
	if url == "" {
		return nil, errors.New("lambda: no queue URL for the record's eventSourceARN")
	}
	b.queuesMu.Lock()
	load, ok := b.queues[url]
	if !ok {
		load = &queueLoad{done: make(chan struct{})}
		b.queues[url] = load
		go b.loadQueue(context.WithoutCancel(ctx), client, url, load)
	}
	b.queuesMu.Unlock()
	select {
	case <-load.done:
		return load.queue, load.err
	case <-ctx.Done():
		return nil, fmt.Errorf("lambda: waiting for the attributes of queue %s: %w", url, context.Cause(ctx))
	}
}

// loadQueue runs one shared LoadQueue call, bounded by queueLoadTimeout, and publishes
// its result. A failed load is removed from the cache so that the next call retries.
func (b *batchHandler) loadQueue(ctx context.Context, client SQSAPI, url string, load *queueLoad) {
	ctx, cancel := context.WithTimeout(ctx, queueLoadTimeout)
	defer cancel()
	queue, err := sqsworker.LoadQueue(ctx, client, url)
	b.queuesMu.Lock()
	load.queue, load.err = queue, err
	if err != nil {
		delete(b.queues, url)
	}
	b.queuesMu.Unlock()
	close(load.done)
}

// recordAttrs are the log attributes every record log line carries.
func (b *batchHandler) recordAttrs(ctx context.Context, r *record) []slog.Attr {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("message_id", r.message.ID),
		slog.String("queue", r.message.QueueURL),
		slog.Int("receive_count", r.message.ReceiveCount))
	if r.message.GroupID != "" {
		attrs = append(attrs, slog.String("message_group_id", r.message.GroupID))
	}
	return append(attrs, requestAttrs(ctx)...)
}

// requestAttrs is the Lambda request id of the invocation, when ctx carries one
// (lambdacontext), as a log attribute list; every log line of an invocation carries it.
func requestAttrs(ctx context.Context) []slog.Attr {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return []slog.Attr{slog.String("aws_request_id", lc.AwsRequestID)}
	}
	return nil
}
