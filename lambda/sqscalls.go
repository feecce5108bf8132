package lambda

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// sqsCalls is the adapter's SQS side: a client made on first use, and the queues'
// descriptions (with their dead-letter queues), read once per execution environment.
type sqsCalls struct {
	logger *slog.Logger

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
	queue *sqsinfo.Queue
	err   error
}

// queueLoadTimeout bounds a shared LoadQueue call (GetQueueAttributes and GetQueueUrl).
// The call does not end with the invocation that started it, since other invocations may
// be waiting for it; each waiter stops waiting at its own deadline.
const queueLoadTimeout = 10 * time.Second

// sqsClient returns the configured client, or makes one from the default AWS
// configuration on first use. A failure is not cached: the next call tries again.
func (c *sqsCalls) sqsClient(ctx context.Context) (SQSAPI, error) {
	c.clientMu.Lock()
	defer c.clientMu.Unlock()
	if c.client == nil {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("lambda: loading the AWS configuration: %w", err)
		}
		c.client = sqs.NewFromConfig(cfg)
	}
	return c.client, nil
}

// queue returns the queue's description (with its dead-letter queue), loading it on
// first use. Concurrent invocations share one load; each waits at most until its own ctx
// ends. A failure is not cached: the next call loads again.
func (c *sqsCalls) queue(ctx context.Context, client SQSAPI, url string) (*sqsinfo.Queue, error) {
	if url == "" {
		return nil, errors.New("lambda: no queue URL for the record's eventSourceARN")
	}
	c.queuesMu.Lock()
	load, ok := c.queues[url]
	if !ok {
		load = &queueLoad{done: make(chan struct{})}
		c.queues[url] = load
		go c.loadQueue(context.WithoutCancel(ctx), client, url, load)
	}
	c.queuesMu.Unlock()
	select {
	case <-load.done:
		return load.queue, load.err
	case <-ctx.Done():
		return nil, fmt.Errorf("lambda: waiting for the attributes of queue %s: %w", url, context.Cause(ctx))
	}
}

// loadQueue runs one shared LoadQueue call, bounded by queueLoadTimeout, and publishes
// its result. A failed load is removed from the cache so that the next call retries.
func (c *sqsCalls) loadQueue(ctx context.Context, client SQSAPI, url string, load *queueLoad) {
	ctx, cancel := context.WithTimeout(ctx, queueLoadTimeout)
	defer cancel()
	queue, err := sqsinfo.LoadQueue(ctx, client, url)
	c.queuesMu.Lock()
	load.queue, load.err = queue, err
	if err != nil {
		delete(c.queues, url)
	}
	c.queuesMu.Unlock()
	close(load.done)
}

// byQueue calls send for records grouped by queue URL (ten per request inside send, by
// sqsx), then done for each record with its result. A record without a queue URL, or
// when there is no client, gets an error without a call. Failed calls and entries are
// logged.
func (c *sqsCalls) byQueue(ctx context.Context, records []*record, operation string,
	send func(client SQSAPI, queueURL string, batch []*record) []sqsx.Result, done func(r *record, err error)) {
	if len(records) == 0 {
		return
	}
	var order []string
	byQueue := make(map[string][]*record)
	for _, r := range records {
		url := r.message.QueueURL
		if _, ok := byQueue[url]; !ok {
			order = append(order, url)
		}
		byQueue[url] = append(byQueue[url], r)
	}
	client, err := c.sqsClient(ctx)
	if err != nil {
		c.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" not sent", append(requestAttrs(ctx), slog.Any("error", err))...)
		for _, r := range records {
			done(r, err)
		}
		return
	}
	for _, url := range order {
		batch := byQueue[url]
		if url == "" {
			err := errors.New("lambda: no queue URL for the record's eventSourceARN")
			for _, r := range batch {
				c.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" not sent: no queue URL for the record's eventSourceARN",
					append(recordAttrs(ctx, r.message), slog.String("event_source_arn", r.event.EventSourceARN))...)
				done(r, err)
			}
			continue
		}
		loggedCall := false
		for i, result := range send(client, url, batch) {
			if callErr, ok := errors.AsType[*sqsx.CallError](result.Err); ok && !loggedCall {
				loggedCall = true
				c.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" failed",
					append(requestAttrs(ctx), slog.String("queue", url), slog.Int("entries", callErr.Entries), slog.Any("error", callErr.Err))...)
			} else if entry, ok := errors.AsType[*sqsx.EntryError](result.Err); ok {
				c.logger.LogAttrs(ctx, slog.LevelError, "lambda: "+operation+" entry failed",
					append(requestAttrs(ctx), slog.String("queue", url), slog.String("code", entry.Code), slog.String("error", entry.Message),
						slog.Bool("sender_fault", entry.SenderFault), slog.String("message_id", batch[i].message.ID))...)
			}
			done(batch[i], result.Err)
		}
	}
}

// deadLetter is the adapter's dead-letter send: the queue of the record, its redrive
// policy and dead-letter queue from the cached description.
type deadLetter struct{ calls *sqsCalls }

func (d deadLetter) Queue(ctx context.Context, message *sqsworker.Message) (*sqsinfo.Queue, error) {
	client, err := d.calls.sqsClient(ctx)
	if err != nil {
		return nil, err
	}
	return d.calls.queue(ctx, client, message.QueueURL)
}

func (d deadLetter) Send(ctx context.Context, message *sqsworker.Message, outcome sqsworker.Outcome) error {
	client, err := d.calls.sqsClient(ctx)
	if err != nil {
		return err
	}
	queue, err := d.calls.queue(ctx, client, message.QueueURL)
	if err != nil {
		return err
	}
	return settle.SendToDeadLetterQueue(ctx, client, queue, message, outcome)
}

// recordAttrs are the log attributes of a record outside the settler's logs.
func recordAttrs(ctx context.Context, m *sqsworker.Message) []slog.Attr {
	attrs := []slog.Attr{slog.String("message_id", m.ID), slog.String("queue", m.QueueURL), slog.Int("receive_count", m.ReceiveCount)}
	if m.GroupID != "" {
		attrs = append(attrs, slog.String("message_group_id", m.GroupID))
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
