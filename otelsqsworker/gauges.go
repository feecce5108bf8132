package otelsqsworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/otelsqsworker/internal/instrument"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// DefaultGaugeInterval is QueueGaugesConfig.Interval when zero: each queue's attributes
// are read once every 15 s.
const DefaultGaugeInterval = 15 * time.Second

// QueueAttributesAPI is the part of the SQS client [QueueGauges] uses. *sqs.Client
// satisfies it.
type QueueAttributesAPI = sqsinfo.QueueAttributesAPI

// QueueGaugesConfig configures [NewQueueGauges].
type QueueGaugesConfig struct {
	// Client reads the queues' attributes. Required.
	Client QueueAttributesAPI
	// QueueURLs are the queues to watch. Required.
	QueueURLs []string
	// Interval is how often each queue's counts are read; if zero, DefaultGaugeInterval
	// (15 s). Each read is one GetQueueAttributes call per queue, and one more for its
	// dead-letter queue when it has a redrive policy: 8 calls a minute per queue with a
	// dead-letter queue by default, never one per message.
	Interval time.Duration
	// MeterProvider records the gauges; if nil, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Logger receives failed reads (the gauges keep their last values); nil discards.
	Logger *slog.Logger
}

// QueueGauges reads each queue's approximate counts at a bounded rate and reports them
// as gauges ({message}), by queue (messaging.destination.name):
//
//   - sqsworker.queue.messages.visible: ApproximateNumberOfMessages;
//   - sqsworker.queue.messages.in_flight: ApproximateNumberOfMessagesNotVisible;
//   - sqsworker.queue.messages.delayed: ApproximateNumberOfMessagesDelayed;
//   - sqsworker.queue.dead_letter.messages: the visible messages of the queue's
//     dead-letter queue (its redrive policy's deadLetterTargetArn).
//
// SQS documents these counts as approximate. The age of the oldest message is
// estimated by [Metrics] from the messages the worker receives
// (sqsworker.queue.oldest_message.age). Run reads until its context ends.
type QueueGauges struct {
	cfg                                    QueueGaugesConfig
	logger                                 *slog.Logger
	queues                                 []*gaugeQueue
	visible, inFlight, delayed, deadLetter metric.Int64ObservableGauge
	registration                           metric.Registration
	running                                sync.Mutex
}

type gaugeQueue struct {
	url                                    string
	set                                    attribute.Set
	deadLetterURL                          string
	loaded                                 bool
	visible, inFlight, delayed, deadLetter atomic.Int64
	read, deadLetterRead                   atomic.Bool
}

// NewQueueGauges creates the gauges. It returns an error for a missing client or queue,
// or when the meter refuses a gauge.
func NewQueueGauges(cfg QueueGaugesConfig) (*QueueGauges, error) {
	if cfg.Client == nil {
		return nil, errors.New("otelsqsworker: QueueGaugesConfig.Client is nil")
	}
	if len(cfg.QueueURLs) == 0 {
		return nil, errors.New("otelsqsworker: QueueGaugesConfig.QueueURLs is empty")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("otelsqsworker: QueueGaugesConfig.Interval %s is negative", cfg.Interval)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultGaugeInterval
	}
	g := &QueueGauges{cfg: cfg, logger: cfg.Logger}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	for _, url := range cfg.QueueURLs {
		g.queues = append(g.queues, &gaugeQueue{url: url, set: attribute.NewSet(KeyQueue.String(QueueName(url)))})
	}
	build := instrument.New(cfg.MeterProvider, ScopeName)
	g.visible = build.ObservableGauge("sqsworker.queue.messages.visible", instrument.Message, "ApproximateNumberOfMessages of the queue.")
	g.inFlight = build.ObservableGauge("sqsworker.queue.messages.in_flight", instrument.Message, "ApproximateNumberOfMessagesNotVisible of the queue.")
	g.delayed = build.ObservableGauge("sqsworker.queue.messages.delayed", instrument.Message, "ApproximateNumberOfMessagesDelayed of the queue.")
	g.deadLetter = build.ObservableGauge("sqsworker.queue.dead_letter.messages", instrument.Message, "ApproximateNumberOfMessages of the queue's dead-letter queue.")
	if err := build.Err(); err != nil {
		return nil, err
	}
	registration, err := build.Meter().RegisterCallback(g.observe, g.visible, g.inFlight, g.delayed, g.deadLetter)
	if err != nil {
		return nil, err
	}
	g.registration = registration
	return g, nil
}

// Run reads every queue's counts at once and then every Interval, until ctx ends; it
// returns ctx's error. Only one Run may be active at a time. The gauges report nothing
// for a queue until its first read succeeded.
func (g *QueueGauges) Run(ctx context.Context) error {
	if !g.running.TryLock() {
		return errors.New("otelsqsworker: QueueGauges.Run is already running")
	}
	defer g.running.Unlock()
	ticker := time.NewTicker(g.cfg.Interval)
	defer ticker.Stop()
	for {
		g.read(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// Close unregisters the gauges' callback.
func (g *QueueGauges) Close() error { return g.registration.Unregister() }

// read takes one reading of every queue, each call bounded by the interval.
func (g *QueueGauges) read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Interval)
	defer cancel()
	for _, q := range g.queues {
		if !q.loaded {
			queue, err := sqsinfo.LoadQueue(ctx, g.cfg.Client, q.url)
			if err != nil {
				g.logger.Warn("otelsqsworker: reading queue attributes failed", "queue", q.url, "error", err)
				continue
			}
			q.loaded, q.deadLetterURL = true, queue.DeadLetterQueueURL
		}
		depth, err := sqsinfo.QueueDepth(ctx, g.cfg.Client, q.url)
		if err != nil {
			g.logger.Warn("otelsqsworker: reading queue depth failed", "queue", q.url, "error", err)
		} else {
			q.visible.Store(int64(depth.Visible))
			q.inFlight.Store(int64(depth.InFlight))
			q.delayed.Store(int64(depth.Delayed))
			q.read.Store(true)
		}
		if q.deadLetterURL == "" {
			continue
		}
		deadLetter, err := sqsinfo.QueueDepth(ctx, g.cfg.Client, q.deadLetterURL)
		if err != nil {
			g.logger.Warn("otelsqsworker: reading dead-letter queue depth failed", "queue", q.deadLetterURL, "error", err)
			continue
		}
		q.deadLetter.Store(int64(deadLetter.Visible))
		q.deadLetterRead.Store(true)
	}
}

func (g *QueueGauges) observe(_ context.Context, observer metric.Observer) error {
	for _, q := range g.queues {
		option := metric.WithAttributeSet(q.set)
		if q.read.Load() {
			observer.ObserveInt64(g.visible, q.visible.Load(), option)
			observer.ObserveInt64(g.inFlight, q.inFlight.Load(), option)
			observer.ObserveInt64(g.delayed, q.delayed.Load(), option)
		}
		if q.deadLetterRead.Load() {
			observer.ObserveInt64(g.deadLetter, q.deadLetter.Load(), option)
		}
	}
	return nil
}
