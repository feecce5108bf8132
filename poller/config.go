package poller

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/hostsettings"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Defaults and limits. The receive defaults are SQS's own maximums.
const (
	// defaultConcurrency is Config.Concurrency when zero: both hosts' default.
	defaultConcurrency = hostsettings.DefaultConcurrency
	// defaultMaxMessages is Config.MaxMessages when zero: MaxNumberOfMessages' maximum.
	defaultMaxMessages = sqsinfo.MaxBatchEntries
	// maxReceivers bounds Config.Receivers and its default: 10 long polls of up to 10
	// messages each is 100 messages per round trip, and the SDK's default HTTP transport
	// keeps 10 idle connections per host, which the receivers share with deletes and
	// heartbeats; more calls in flight would open and close connections instead.
	maxReceivers = 10
	// maxReceiveGather bounds Config.ReceiveGather: a longer wait would leave slots
	// idle for longer than most handlers run.
	maxReceiveGather = time.Second
	// maxPrefetch bounds Config.Prefetch: one full ReceiveMessage batch (SQS's 10) is
	// what a receive needs to stop asking for fragments; more held messages would only
	// wait longer, their visibility clock running.
	maxPrefetch = sqsinfo.MaxBatchEntries
	// defaultWaitTime is Config.WaitTime when zero: the longest long poll.
	defaultWaitTime = sqsinfo.MaxWaitTime
	// httpTimeoutSlack is how much longer than the long poll an HTTP timeout must be.
	httpTimeoutSlack = 5 * time.Second
	// defaultHandlerTimeout is Config.HandlerTimeout when zero.
	defaultHandlerTimeout = 5 * time.Minute
	// defaultDrainTimeout is Config.DrainTimeout when zero (and Config.StopTimeout is
	// unknown): ECS's default 30 s stopTimeout less stopTimeoutMargin.
	defaultDrainTimeout = 30*time.Second - stopTimeoutMargin
	// stopTimeoutMargin is what a shutdown needs after its drain deadline: cancelGrace
	// for cancelled handlers to return, finalFlushTimeout for the last deletes, and 1 s
	// of slack. The drain deadline is at most Config.StopTimeout less this.
	stopTimeoutMargin = cancelGrace + finalFlushTimeout + time.Second
	// stopExitMargin: Run ends a shutdown at the latest this long before
	// Config.StopTimeout, cancelling the long polls still in flight, so the final delete
	// flush (finalFlushTimeout) ends a second before the platform's kill.
	stopExitMargin = finalFlushTimeout + time.Second
	// maxDefaultReceiveVisibility caps Config.ReceiveVisibility's default.
	maxDefaultReceiveVisibility = 30 * time.Second
	// minDefaultVisibilityExtension is the smallest VisibilityExtension taken from the
	// queue's visibility timeout when Config.VisibilityExtension is zero.
	minDefaultVisibilityExtension = 10 * time.Second
	// defaultHeartbeatDivisor: when Config.HeartbeatInterval is zero, the interval is
	// VisibilityExtension / 3, so two heartbeats can fail before the message reappears.
	defaultHeartbeatDivisor = 3
	// defaultDeleteFlushInterval is Config.DeleteFlushInterval when zero.
	defaultDeleteFlushInterval = 100 * time.Millisecond
	// maxDeleteFlushInterval bounds Config.DeleteFlushInterval: longer delays would eat
	// into the receipt handle's visibility.
	maxDeleteFlushInterval = 5 * time.Second
	// maxHandlerTimeout: a handler must finish within SQS's 12-hour visibility limit
	// (counted from the receive), less the safety margin the visibility clamp keeps.
	maxHandlerTimeout = sqsinfo.MaxVisibilityTimeout - sqsx.VisibilitySafetyMargin
)

// MinMaxReceiveCount is the lowest redrive policy maxReceiveCount Start accepts without
// Config.AllowLowMaxReceiveCount, and RecommendedMaxReceiveCount the lowest it accepts
// without a warning. Every receive counts toward maxReceiveCount (a peek, a lost
// ReceiveMessage response, a crash), so low values dead-letter messages that were
// never handled or failed once.
const (
	MinMaxReceiveCount         = 3
	RecommendedMaxReceiveCount = 5
)

// Config configures a [Server]. The zero value of every field but QueueURL (or Queues)
// is usable.
type Config struct {
	// QueueURL specifies the queue to consume, with the handler given to [New]. Required
	// unless Queues is set; not both.
	QueueURL string

	// Queues specifies several queues to consume from one Concurrency pool, each with
	// its own handler (or the one given to New), weight, limits, visibility and backoff
	// (see [QueueConfig]); Priority decides how they share the slots. Empty: QueueURL.
	Queues []QueueConfig

	// Priority specifies how Queues share the slots and receives: [Weighted] (the
	// default) or [Strict]. It has no effect with one queue.
	Priority Priority

	// JobTypeLimits bounds the handler calls of each job type (the message's
	// [sqsworker.AttributeJobType] attribute) across every queue of the server: at once,
	// and per second. The job type is known only once a message is received, so a
	// message over its type's limit waits in this process, its heartbeat running and
	// its Concurrency slot held, until its type has room: nothing is lost or received
	// again, and its receive count does not grow (releasing it with a short visibility
	// change instead would count a receive toward maxReceiveCount each time, and could
	// dead-letter a message that was never handled). For a limit that must act before
	// the receive, give the job type its own queue and set [QueueConfig].Limit.
	JobTypeLimits map[string]Limit

	// Concurrency specifies how many messages are handled at the same time, and so how
	// many the server holds at most (received, not yet settled; Concurrency + Prefetch
	// with Prefetch); if zero, defaults to 10.
	Concurrency int

	// MaxMessages specifies the most messages one ReceiveMessage call asks for, 1 to 10
	// (SQS's limit); if zero, defaults to 10. Each call asks for at most as many messages
	// as there are free Concurrency slots (plus Prefetch), so no message waits received but
	// unstarted unless Prefetch allows it.
	MaxMessages int

	// Receivers specifies how many ReceiveMessage calls may be in flight at once, 1 to
	// 10 and at most Concurrency; if zero, defaults to ⌈Concurrency / MaxMessages⌉, at
	// most 10 (2 for Concurrency 20: enough long polls to fill every slot). Each call
	// still asks only for free slots, so the calls in flight together never ask for more
	// messages than there are free Concurrency slots. A receiver polls as soon as a slot
	// is free when no other call is in flight; otherwise it waits until it can ask for a
	// full batch (MaxMessages, or all the slots the calls in flight leave), so extra
	// receivers add whole batches, not calls for one or two messages. On an idle queue
	// each receiver makes one call per WaitTime. The cap of 10 is 100 messages per round
	// trip, and the 10 idle connections per host of the SDK's default HTTP transport,
	// shared with deletes and heartbeats. With several queues (Queues) it counts per
	// queue, and defaults to at least 2: while one receive of a queue is in flight the
	// other waits for freed slots, so they go to the queue owed them by its weight
	// rather than to whichever queue happens to be waiting.
	Receivers int

	// ReceiveGather specifies how long a receive waits for more Concurrency slots to
	// free before asking for fewer messages than a full batch (MaxMessages, or what the
	// receives in flight leave), counted from when it first could have asked; 0 turns
	// it off (a receive goes as soon as one slot is free); at most 1 s; if negative,
	// rejected. With slow handlers that finish one by one it trades idle slot time for
	// fewer ReceiveMessage calls per message. Measured with the bench (LocalStack,
	// Concurrency 20, 10-200 ms handlers, slot bound about 190 msg/s; SQS calls per
	// message, deletes included): off 173 msg/s at 0.87; 5 ms 167 at 0.76; 10 ms 157 at
	// 0.58; 20 ms 154 at 0.48; 40 ms 141 at 0.35. Every millisecond gathered is a
	// millisecond a freed slot stays idle, so it is off by default.
	ReceiveGather time.Duration

	// Prefetch specifies how many messages the server may hold received but not started
	// beyond Concurrency, 0 to 10 (one ReceiveMessage batch); 0, the default, turns it
	// off. It is a per-server bound, shared by every queue of Queues. With it a receive
	// asks for a full batch while the handlers are busy (a receive with no other in
	// flight waits for Prefetch free slots, or a full batch if fewer), and a handler
	// that returns starts the longest held message at once, in receive order (a FIFO
	// group still runs one message at a time, in order). Held messages count against
	// their queue's share under Priority and its MaxSlots.
	//
	// What it costs: a held message's visibility timeout runs while it waits; heartbeats
	// extend it from the receive on (HeartbeatInterval, the first within half of
	// ReceiveVisibility), so it never reappears while held, but a crash of the process
	// leaves the held messages invisible until their visibility ends (at most
	// VisibilityExtension), and each held message was received once more toward the
	// redrive policy's maxReceiveCount. A shutdown releases the held messages at once
	// (visibility 0), before the drain; none is handed to a handler after the shutdown
	// began. Under Strict priority up to Prefetch messages of a lower queue, received
	// while the higher ones were idle, may still start after a higher queue has
	// messages again.
	//
	// It is refused with a rate limit (a queue's Limit.RatePerSecond) or with
	// JobTypeLimits: those promise that a message over its limit is not received early
	// (a queue's rate acts before the receive) or waits holding a Concurrency slot (a
	// job type's); messages held beyond Concurrency would break both. Negative values
	// and values above 10 are rejected.
	//
	// Measured with the bench (LocalStack, Concurrency 20, 10-200 ms handlers, slot
	// bound about 190 msg/s; SQS calls per message, deletes included; 1,500 messages,
	// median of 2): off 172 msg/s at 0.90; Prefetch 5 147 at 0.29 (a receive waits for
	// 5 free slots, so the last held message has started before the receive returns);
	// Prefetch 10 181 to 183 at 0.21 (two runs). Use 10 (one full batch) when it is on;
	// 15 and 20, tried with the bound raised, made 182 and 183 at 0.21, no better, so
	// the bound is one batch. Behind the idempotency middleware (two DynamoDB writes a
	// job) the same holds for a no-op handler: 0.510 calls per message at 116 msg/s off,
	// 0.201 at 130 with 10 (LocalStack, 10 ms per SQS call, 2026-12-04). It is off by
	// default because held messages wait while another replica may be idle, which
	// handlers of minutes make costly.
	Prefetch int

	// WaitTime specifies the long-poll wait (WaitTimeSeconds), whole seconds from 1 s to
	// 20 s (SQS's limit); if zero, defaults to 20 s. A shutdown lets the long poll in
	// flight finish (see [Server.Shutdown]), so an idle worker stops within WaitTime.
	WaitTime time.Duration

	// HandlerTimeout specifies the hard timeout of one handler call: at the timeout the
	// handler's context is cancelled (cause [ErrHandlerTimeout]), its heartbeat stops and
	// the message is retried with Backoff. It must stay under 12 h (SQS's visibility
	// limit); if zero, defaults to 5 minutes.
	HandlerTimeout time.Duration

	// MaxAbandonedHandlers specifies how many abandoned handler calls (still running a
	// second after their context was cancelled at HandlerTimeout: they ignore ctx) may
	// run on without a Concurrency slot; if zero, defaults to Concurrency. Up to this
	// many, an abandoned call gives its slot back at once, so receiving goes on; beyond
	// it, an abandoned call keeps its slot until it returns, and when abandoned calls
	// hold every slot the server cannot receive and the health endpoint answers 503.
	// So at most Concurrency + MaxAbandonedHandlers handler calls run at once; an
	// abandoned call costs its own goroutine only (nothing of the server's waits for
	// it; a shutdown waits for it until the drain deadline). Stats.Abandoned
	// counts them, Stats.AbandonedRunning those still running; each is logged when
	// abandoned and when it finally returns. Negative values are rejected.
	MaxAbandonedHandlers int

	// ReceiveVisibility specifies the visibility timeout each ReceiveMessage call asks
	// for (its VisibilityTimeout), whole seconds up to 12 h; heartbeats then extend it to
	// VisibilityExtension while the message is held. If zero, defaults to the queue's
	// VisibilityTimeout, but at most 30 s. It bounds how long a message stays hidden when
	// the ReceiveMessage response carrying it is lost (a connection reset after SQS
	// handed it out): at most ReceiveVisibility, not the queue's whole visibility
	// timeout. Negative values are rejected.
	ReceiveVisibility time.Duration

	// HeartbeatInterval specifies how often the visibility of a held message is extended
	// (ChangeMessageVisibilityBatch). It must be shorter than VisibilityExtension; if zero,
	// defaults to VisibilityExtension / 3.
	HeartbeatInterval time.Duration

	// VisibilityExtension specifies the visibility timeout each heartbeat sets, at most
	// 12 h; if zero, defaults to the queue's VisibilityTimeout, but at least 10 s. It is
	// also how long a message stays hidden if this process dies while holding it.
	VisibilityExtension time.Duration

	// DrainTimeout specifies how long a shutdown waits for running handlers before it
	// cancels them and releases their messages (visibility 0); if zero, defaults to
	// StopTimeout − 5 s, or 25 s when StopTimeout is unknown (which fits ECS's default
	// 30 s stopTimeout). With StopTimeout set, a longer DrainTimeout is lowered to
	// StopTimeout − 5 s, and Start logs a warning saying so. Negative values are
	// rejected.
	DrainTimeout time.Duration

	// StopTimeout specifies how long the platform waits after SIGTERM before it kills
	// the process: ECS's container stopTimeout (30 s by default, at most 120 s on
	// Fargate), `docker stop --time`, Kubernetes' terminationGracePeriodSeconds. Zero
	// means unknown. When set, it must be more than 5 s, and it bounds the shutdown so
	// the process exits before the kill (exit code 0, not 137): the drain deadline is at
	// most StopTimeout − 5 s (after the deadline the shutdown still gives cancelled
	// handlers 1 s and its final delete flush up to 3 s, plus 1 s of slack), and Run
	// ends the shutdown StopTimeout − 4 s after the signal at the latest, cancelling the
	// long polls still in flight (whose messages, if SQS still hands them out, return
	// after ReceiveVisibility). The worker package sets it from SQSWORKER_STOP_TIMEOUT,
	// which the Terraform module poller-service passes from its stop timeout.
	StopTimeout time.Duration

	// Backoff specifies the retry delay of failed messages (see [sqsworker.Backoff]);
	// the zero value is exponential from 2 s to 10 minutes with full jitter.
	Backoff sqsworker.Backoff

	// AllowUnboundedRetries lets Start accept a queue without a redrive policy, where a
	// message that always fails is retried forever. If false, Start refuses such a queue.
	AllowUnboundedRetries bool

	// AllowLowMaxReceiveCount lets Start accept a redrive policy with maxReceiveCount 1
	// or 2. If false, Start refuses it (see [MinMaxReceiveCount]): every receive counts
	// toward maxReceiveCount, not only the handler's attempts (a console or CLI peek, a
	// ReceiveMessage response lost on the network, a crash of this process while holding
	// the message), so a message can reach the dead-letter queue without ever being
	// handled, or after one failure. Start logs a warning for values below
	// [RecommendedMaxReceiveCount] either way.
	AllowLowMaxReceiveCount bool

	// DisableDeadLetterSend makes permanent failures ([sqsworker.Permanent]) ordinary
	// retries, so they reach the dead-letter queue through the redrive policy after
	// maxReceiveCount receives instead of at once, without the failure attributes.
	DisableDeadLetterSend bool

	// HTTPClientTimeout specifies the response timeout of the SQS client's HTTP client,
	// for clients New cannot inspect (New reads *awshttp.BuildableClient and *http.Client
	// from a client with an Options method, such as *sqs.Client). If set, it must be at
	// least WaitTime + 5 s, or every long poll on an idle queue would time out; zero
	// means unknown (not checked).
	HTTPClientTimeout time.Duration

	// DeleteFlushInterval specifies how long a delete waits to be batched with others
	// (DeleteMessageBatch sends up to 10); if zero, defaults to 100 ms; at most 5 s.
	DeleteFlushInterval time.Duration

	// Logger receives the server's logs (each message's logs carry message_id, queue and
	// receive_count; bodies are never logged); if nil, [slog.Default] (pass a logger
	// with a discarding handler to silence the server).
	Logger *slog.Logger

	// ErrorHandler, if set, is called with the handler's original error after every
	// failed attempt (retry, retry-after, dead-letter), for metrics or error reporting.
	ErrorHandler func(ctx context.Context, message *sqsworker.Message, err error)

	// Observer, if set, is told about every message's life (received, started,
	// finished, heartbeats, deleted, dead-lettered, rescheduled, released, abandoned):
	// the same events the Lambda adapter reports; see [sqsworker.Observer]. Stats counts
	// the same events.
	Observer sqsworker.Observer

	// HealthCheckAddress, if set (for example "127.0.0.1:8080"), serves GET /healthz
	// there: 200 while the server runs; 503 once it is stopping, or while abandoned
	// handlers hold every concurrency slot so it cannot receive (see
	// MaxAbandonedHandlers); the body gives the reason. Empty turns it off. See
	// [CheckHealth].
	HealthCheckAddress string

	// MetricsHandler, if set, is served at GET /metrics ([MetricsPath]) on
	// HealthCheckAddress, beside /healthz, so a container exposes one port: for example
	// the Prometheus handler of package otelsqsworker. It requires HealthCheckAddress.
	MetricsHandler http.Handler
}

// withDefaults returns c with zero fields set to their defaults. Fields that depend on
// the queue (VisibilityExtension, HeartbeatInterval) are filled by withQueue.
func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = defaultConcurrency
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = defaultMaxMessages
	}
	if c.MaxAbandonedHandlers == 0 {
		c.MaxAbandonedHandlers = max(c.Concurrency, 1)
	}
	if c.Receivers == 0 {
		c.Receivers = defaultReceivers(c.Concurrency, c.MaxMessages)
		if len(c.Queues) > 1 {
			// Per queue: while one receive is in flight the other waits for slots, so
			// the weighted shares hold (see pool) however long a receive takes.
			c.Receivers = min(max(c.Receivers, 2), max(c.Concurrency, 1))
		}
	}
	if c.WaitTime == 0 {
		c.WaitTime = defaultWaitTime
	}
	if c.HandlerTimeout == 0 {
		c.HandlerTimeout = defaultHandlerTimeout
	}
	if budget := c.drainBudget(); budget > 0 && (c.DrainTimeout == 0 || c.DrainTimeout > budget) {
		c.DrainTimeout = budget
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = defaultDrainTimeout
	}
	if c.DeleteFlushInterval == 0 {
		c.DeleteFlushInterval = defaultDeleteFlushInterval
	}
	c.Logger = hostsettings.Logger(c.Logger)
	c.Backoff = hostsettings.ForConcurrentUse(c.Backoff)
	if len(c.Queues) > 0 {
		c.Queues = slices.Clone(c.Queues)
		for i := range c.Queues {
			c.Queues[i].Backoff = hostsettings.ForConcurrentUse(c.Queues[i].Backoff)
		}
	}
	return c
}

// defaultReceivers is Config.Receivers when zero: ⌈concurrency / maxMessages⌉, the
// fewest calls in flight that can fill every slot, at most maxReceivers. Invalid
// inputs (reported by validate) give 1.
func defaultReceivers(concurrency, maxMessages int) int {
	if concurrency < 1 || maxMessages < 1 {
		return 1
	}
	return min((concurrency+maxMessages-1)/maxMessages, maxReceivers)
}

// drainBudget is the longest drain StopTimeout leaves (StopTimeout − 5 s), or 0 when
// StopTimeout is unknown or too short (validate reports that).
func (c Config) drainBudget() time.Duration {
	if c.StopTimeout <= stopTimeoutMargin {
		return 0
	}
	return c.StopTimeout - stopTimeoutMargin
}

// drainLowered returns the warning Start logs when DrainTimeout, as given, exceeds what
// StopTimeout leaves and is lowered (c is the Config before defaults), or "".
func (c Config) drainLowered() string {
	budget := c.drainBudget()
	if budget == 0 || c.DrainTimeout <= budget {
		return ""
	}
	return fmt.Sprintf("poller: drain timeout %s exceeds the stop timeout %s less the %s the shutdown needs after its drain deadline; draining for %s, so the process exits before it is killed",
		c.DrainTimeout, c.StopTimeout, stopTimeoutMargin, budget)
}
