package lambda

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// BatchHandler handles the SQS event source mapping's invocations of one execution
// environment: pass its Handle method to aws-lambda-go's lambda.Start. It handles every
// record with the handler and returns the records that failed in batchItemFailures, by
// message id; when none failed the response is {"batchItemFailures":[]}. See the package
// documentation for the outcome rules and the options for concurrency, FIFO ordering and
// the deadline budget. Build it once (in main or at package level) and share it: it keeps
// no state from one invocation to the next except its SQS client, the queues'
// descriptions and its counters. It is safe for concurrent invocations: Lambda Managed
// Instances run up to AWS_LAMBDA_MAX_CONCURRENCY of them at once in one process, each on
// its own goroutine, and each invocation's records, outcomes and response stay its own
// (see the package documentation for what they share).
type BatchHandler struct {
	handler sqsworker.Handler
	cfg     config
	settler *settle.Settler
	counter sqsworker.Counter
	calls   sqsCalls
}

// NewBatchHandler returns the batch handler of handler with options applied in order
// (a later option wins). It returns an error, and no handler, when handler is nil or the
// options are not valid: every problem at once, one per line, each starting with
// "lambda: "; a setting the poller also takes (Concurrency, Backoff) reads as
// poller.New's problem with it does. A Lambda function's main usually ends there with
// log.Fatal, so the function's init fails with the error in its logs.
func NewBatchHandler(handler sqsworker.Handler, options ...Option) (*BatchHandler, error) {
	cfg, err := newConfig(options)
	if handler == nil {
		err = errors.Join(errors.New("lambda: the handler is nil"), err)
	}
	if err != nil {
		return nil, err
	}
	b := &BatchHandler{handler: handler, cfg: cfg}
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
	return b, nil
}

// Stats returns the counts of every invocation so far, as [sqsworker.Counter] counts the
// events the adapter reports. It is safe to call while invocations run; each count is
// exact, but counts read while invocations run need not be of one instant.
func (b *BatchHandler) Stats() sqsworker.Stats { return b.counter.Stats() }

// record is one record of the invocation and what became of it.
type record struct {
	index    int
	event    *events.SQSMessage
	message  *sqsworker.Message
	delivery settle.Delivery
	// failed: reported in batchItemFailures, after its visibility is set to
	// action.Visibility (rescheduled) or to 0 (released: released is why), or left as it
	// is (untouched: not started because the invocation fails for an infrastructure
	// fault; it comes back after its visibility timeout).
	failed    bool
	action    settle.Action
	released  string
	untouched bool
	// state is where the record is; guarded by the invocation's mutex once workers run.
	state recordState
}

// recordState is a record's progress through the invocation.
type recordState int

const (
	recordPending  recordState = iota // not started
	recordRunning                     // its handler runs
	recordSettling                    // its handler returned (or it is released): being settled
	recordDone                        // settled, or released
)

// invocation is the state the workers of one invocation share with the watchdog that
// gives up on handlers which ignore their context (see run).
type invocation struct {
	mu       sync.Mutex
	gaveUp   bool
	settling int           // records in recordSettling
	settled  chan struct{} // closed when gaveUp and settling reaches 0
	// faults counts the records in a row that failed with one infrastructure fault;
	// once it trips, no record starts (see WithInfrastructureFaultThreshold).
	faults faultStreak
}

// Handle handles one invocation: it is the function lambda.Start calls. Several calls
// may run at once (Lambda Managed Instances); each reports only its own records in its
// response, its observer events and its logs.
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
	settleCtx, cancelSettle := plan.settleContext(ctx)
	defer cancelSettle()
	inv := &invocation{settled: make(chan struct{}), faults: faultStreak{threshold: b.cfg.faultThreshold}}
	b.run(settleCtx, handlerCtx, plan, inv, sequences(records, fifo, b.cfg.fifoMode), skipReason(fifo, b.cfg.fifoMode))
	cancel()
	b.changeVisibility(settleCtx, records)
	return b.respond(settleCtx, records, inv.fault())
}

// run handles the sequences with at most cfg.concurrency of them at once. Inside a
// sequence records run in order; a record that fails or cannot start skips the rest.
// Handlers get handlerCtx; settling uses the invocation's ctx. Handlers run on the
// workers themselves; with a deadline budget, a watchdog waits at most grace() after
// handlerCtx ends, then gives up on the handlers still running (abandoned: their records
// are released, and their workers, when they return, touch nothing) and releases the
// records not started. Settlements in progress are waited for.
func (b *BatchHandler) run(ctx, handlerCtx context.Context, plan budget, inv *invocation, units [][]*record, skipped string) {
	runSequence := func(sequence []*record) {
		for i, r := range sequence {
			if !b.process(ctx, handlerCtx, plan, inv, r) {
				for _, rest := range sequence[i+1:] {
					b.releasePending(ctx, inv, rest, skipped)
				}
				return
			}
		}
	}
	workers := min(b.cfg.concurrency, len(units))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
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
	if !plan.hasDeadline || plan.margin == 0 {
		wg.Wait()
		return
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }() // ends with the last worker, abandoned ones included
	select {
	case <-finished:
		return
	case <-handlerCtx.Done():
	}
	timer := time.NewTimer(plan.grace())
	defer timer.Stop()
	select {
	case <-finished:
		return
	case <-timer.C:
	}
	b.giveUp(ctx, inv, units, plan.grace())
}

// giveUp ends the invocation's wait for its handlers: records whose handler still runs
// are abandoned, records not started are released, and settlements in progress are
// waited for.
func (b *BatchHandler) giveUp(ctx context.Context, inv *invocation, units [][]*record, grace time.Duration) {
	var abandoned, pending []*record
	inv.mu.Lock()
	inv.gaveUp = true
	for _, sequence := range units {
		for _, r := range sequence {
			switch r.state {
			case recordRunning:
				abandoned = append(abandoned, r)
				r.state = recordDone
			case recordPending:
				pending = append(pending, r)
				r.state = recordDone
			}
		}
	}
	settling := inv.settling
	inv.mu.Unlock()
	for _, r := range abandoned {
		b.settler.Abandoned(ctx, r.delivery, "handler did not return after cancellation")
		b.settler.MessageLogger(ctx, r.message).Error("lambda: handler did not return after cancellation (abandoned); record reported as failed",
			"grace", grace)
		r.failed, r.action, r.released = true, settle.Action{}, "handler abandoned"
	}
	for _, r := range pending {
		b.release(ctx, r, "not started: invocation deadline")
	}
	if settling > 0 {
		<-inv.settled
	}
}

// process handles one record if the budget allows and settles its outcome. It reports
// whether the record succeeded (deleted or dead-lettered).
func (b *BatchHandler) process(ctx, handlerCtx context.Context, plan budget, inv *invocation, r *record) bool {
	if !plan.canStart(time.Now()) || handlerCtx.Err() != nil {
		b.releasePending(ctx, inv, r, "not started: invocation deadline")
		return false
	}
	inv.mu.Lock()
	if inv.gaveUp {
		inv.mu.Unlock()
		return false // released by giveUp
	}
	if inv.faults.tripped {
		r.state = recordDone
		inv.mu.Unlock()
		b.leave(ctx, r)
		return false
	}
	r.state = recordRunning
	r.delivery.StartedAt = time.Now()
	started := r.delivery
	inv.mu.Unlock()
	b.settler.Started(ctx, started)
	err := settle.Call(handlerCtx, b.handler, r.message)
	inv.mu.Lock()
	if inv.gaveUp {
		inv.mu.Unlock()
		return false // abandoned: giveUp reported the record
	}
	r.state = recordSettling
	inv.settling++
	inv.faults.record(err)
	inv.mu.Unlock()
	done := b.settler.Settle(ctx, r.delivery, err, recordFinisher{r})
	inv.finish(r)
	return done
}

// finish ends a record's settling (or release) that began under inv.mu; giveUp waits
// for the last one.
func (inv *invocation) finish(r *record) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r.state = recordDone
	inv.settling--
	if inv.gaveUp && inv.settling == 0 {
		close(inv.settled)
	}
}

// releasePending releases a record not started, unless giveUp already did; once the
// invocation fails for an infrastructure fault it leaves it instead.
func (b *BatchHandler) releasePending(ctx context.Context, inv *invocation, r *record, reason string) {
	inv.mu.Lock()
	if inv.gaveUp || r.state != recordPending {
		inv.mu.Unlock()
		return
	}
	r.state = recordSettling
	inv.settling++
	tripped := inv.faults.tripped
	inv.mu.Unlock()
	if tripped {
		b.leave(ctx, r)
	} else {
		b.release(ctx, r, reason)
	}
	inv.finish(r)
}

// leave reports a record failed without handling it and without changing its
// visibility: the invocation fails for an infrastructure fault, which the record would
// meet too, so it comes back after its visibility timeout, as after any invocation error.
func (b *BatchHandler) leave(ctx context.Context, r *record) {
	r.failed, r.action, r.untouched = true, settle.Action{}, true
	b.settler.MessageLogger(ctx, r.message).LogAttrs(ctx, slog.LevelInfo, "lambda: record not started: the invocation fails for an infrastructure fault",
		slog.String("reason", "infrastructure fault"))
}

// fault returns the error of the infrastructure fault that failed the invocation, or nil.
func (inv *invocation) fault() *InfrastructureFaultError {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if !inv.faults.tripped {
		return nil
	}
	return &InfrastructureFaultError{Signature: inv.faults.signature, Records: inv.faults.count, Err: inv.faults.first}
}

// release reports a record failed without handling it; it becomes visible again at
// once. The reason is logged.
func (b *BatchHandler) release(ctx context.Context, r *record, reason string) {
	r.failed, r.action, r.released = true, settle.Action{}, reason
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
