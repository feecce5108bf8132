package lambda

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// NewBatchHandler returns the function to pass to aws-lambda-go's lambda.Start for an
// SQS event source mapping: [New](handler, options...).Handle. It handles every record
// with handler and returns the records that failed in batchItemFailures, by message id;
// when none failed the response is {"batchItemFailures":[]}. See the package
// documentation for the outcome rules and the options for concurrency, FIFO ordering and
// the deadline budget.
//
// It panics when handler is nil.
func NewBatchHandler(handler sqsworker.Handler, options ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return New(handler, options...).Handle
}

// BatchHandler handles the invocations of one execution environment. Build it once (at
// package level or in main) and pass Handle to lambda.Start; it keeps no state from one
// invocation to the next except its SQS client, the queues' descriptions and its
// counters. It is safe for concurrent invocations (Lambda Managed Instances run several
// in one process).
type BatchHandler struct {
	handler sqsworker.Handler
	cfg     config
	settler *settle.Settler
	counter sqsworker.Counter
	calls   sqsCalls
}

// New returns the batch handler of handler. It panics when handler is nil.
func New(handler sqsworker.Handler, options ...Option) *BatchHandler {
	if handler == nil {
		panic("lambda: NewBatchHandler: nil handler")
	}
	b := &BatchHandler{handler: handler, cfg: newConfig(options)}
	b.calls = sqsCalls{client: b.cfg.client, logger: b.cfg.logger, queues: make(map[string]*queueLoad)}
	b.settler = settle.New(settle.Config{
		Host:                  "lambda",
		Backoff:               b.cfg.backoff,
		DeadLetter:            deadLetter{calls: &b.calls},
		DisableDeadLetterSend: b.cfg.disableDeadLetterSend,
		ErrorHandler:          b.cfg.errorHandler,
		Observer:              sqsworker.Observers(&b.counter, b.cfg.observer),
		Logger:                b.cfg.logger,
		LogQueue:              true,
		LogAttrs:              requestAttrs,
	})
	return b
}

// Stats returns the counts of every invocation so far, as [sqsworker.Counter] counts the
// events the adapter reports.
func (b *BatchHandler) Stats() sqsworker.Stats { return b.counter.Stats() }

// record is one record of the invocation and what became of it.
type record struct {
	index    int
	event    *events.SQSMessage
	message  *sqsworker.Message
	delivery settle.Delivery
	// failed: reported in batchItemFailures, after its visibility is set to
	// action.Visibility (rescheduled) or to 0 (released: released is why).
	failed   bool
	action   settle.Action
	released string
}

// Handle handles one invocation: it is the function lambda.Start calls.
func (b *BatchHandler) Handle(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error) {
	invoked := time.Now()
	storage := make([]record, len(event.Records))
	records := make([]*record, len(event.Records))
	lastARN, lastURL := "", ""
	for i := range event.Records {
		source := &event.Records[i]
		if source.EventSourceARN != lastARN {
			lastARN, lastURL = source.EventSourceARN, queueURLFromARN(source.EventSourceARN)
		}
		message := toMessage(source, lastURL)
		storage[i] = record{index: i, event: source, message: message, delivery: settle.Delivery{Message: message, ReceivedAt: invoked}}
		records[i] = &storage[i]
		b.settler.Received(ctx, records[i].delivery)
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
func (b *BatchHandler) run(ctx, handlerCtx context.Context, plan budget, units [][]*record, skipped string) {
	runSequence := func(sequence []*record) {
		for i, r := range sequence {
			if !b.process(ctx, handlerCtx, plan, r) {
				for _, rest := range sequence[i+1:] {
					b.release(ctx, rest, skipped)
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
func (b *BatchHandler) process(ctx, handlerCtx context.Context, plan budget, r *record) bool {
	if !plan.canStart(time.Now()) || handlerCtx.Err() != nil {
		b.release(ctx, r, "not started: invocation deadline")
		return false
	}
	r.delivery.StartedAt = b.settler.Started(ctx, r.delivery)
	err, returned := plan.call(handlerCtx, b.handler, r.message)
	if !returned {
		b.settler.Abandoned(ctx, r.delivery, "handler did not return after cancellation")
		b.settler.MessageLogger(ctx, r.message).Error("lambda: handler did not return after cancellation (abandoned); record reported as failed",
			"grace", plan.grace())
		b.release(ctx, r, "")
		return false
	}
	return b.settler.Settle(ctx, r.delivery, err, recordFinisher{r})
}

// release reports a record failed without handling it (or after abandoning its
// handler); it becomes visible again at once. reason, when not empty, is logged.
func (b *BatchHandler) release(ctx context.Context, r *record, reason string) {
	r.failed, r.action, r.released = true, settle.Action{}, reason
	if r.released == "" {
		r.released = "handler abandoned"
		return
	}
	b.settler.MessageLogger(ctx, r.message).LogAttrs(ctx, slog.LevelInfo, "lambda: record not handled, reported as failed", slog.String("reason", reason))
}

// recordFinisher is the Lambda host's part of settling: a record that is done with is
// reported as a success; one to retry is reported in batchItemFailures after its
// visibility change (see changeVisibility).
type recordFinisher struct{ r *record }

func (f recordFinisher) Finish(context.Context, settle.Delivery) {}

func (f recordFinisher) Reschedule(_ context.Context, _ settle.Delivery, action settle.Action) {
	f.r.failed, f.r.action = true, action
}
