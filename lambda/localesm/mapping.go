package localesm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// SQSAPI is the part of the SQS client the mapping uses. *sqs.Client satisfies it.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Batch is what became of one invocation, passed to Config.OnBatch.
type Batch struct {
	// Event is the event the function received.
	Event events.SQSEvent
	// Endpoint is the function URL invoked.
	Endpoint string
	// Start and End bracket the invocation.
	Start, End time.Time
	// StatusCode is the Invoke API's HTTP status (0 if the request failed).
	StatusCode int
	// Response is the Invoke API's body (nil if the request failed).
	Response []byte
	// Err is nil when the response was honoured, else why the whole batch failed
	// (wrapping ErrFunction or ErrMalformedResponse, or the request's error).
	Err error
	// Failed lists the message ids left in the queue for a retry; with Err set, all.
	Failed []string
	// Deleted lists the message ids deleted.
	Deleted []string
	// DeleteErr reports the deletes that failed, if any.
	DeleteErr error
}

// Stats counts what the mapping did so far.
type Stats struct {
	Invocations   int64 `json:"invocations"`    // invocations made
	FailedBatches int64 `json:"failed_batches"` // invocations whose whole batch failed
	Deleted       int64 `json:"deleted"`        // records deleted
	Retried       int64 `json:"retried"`        // records left for a retry, whole-batch failures included
}

// Mapping is a running event source mapping. Make one with New.
type Mapping struct {
	client   SQSAPI
	cfg      Config
	queueARN string
	region   string

	invocations, failedBatches, deleted, retried atomic.Int64
}

// New checks the configuration and reads the queue's ARN (for eventSourceARN).
func New(ctx context.Context, client SQSAPI, cfg Config) (*Mapping, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	output, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(cfg.QueueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("localesm: reading the ARN of %s: %w", cfg.QueueURL, err)
	}
	arn := output.Attributes[string(types.QueueAttributeNameQueueArn)]
	parsed, err := sqsinfo.ParseQueueARN(arn)
	if err != nil {
		return nil, fmt.Errorf("localesm: queue %s: %w", cfg.QueueURL, err)
	}
	return &Mapping{client: client, cfg: cfg, queueARN: arn, region: parsed.Region}, nil
}

// Stats returns the counts so far.
func (m *Mapping) Stats() Stats {
	return Stats{
		Invocations:   m.invocations.Load(),
		FailedBatches: m.failedBatches.Load(),
		Deleted:       m.deleted.Load(),
		Retried:       m.retried.Load(),
	}
}

// settleTimeout bounds the deletes of a finished invocation once the mapping is stopping.
const settleTimeout = 10 * time.Second

// Run polls and invokes until ctx is cancelled, then returns nil once every poller has
// stopped. An invocation in flight at cancellation is abandoned: its records are neither
// deleted nor released, and come back after their visibility timeout. An invocation that
// already answered still has its successful records deleted.
func (m *Mapping) Run(ctx context.Context) error {
	endpoints := make(chan string, len(m.cfg.FunctionURLs))
	for _, url := range m.cfg.FunctionURLs {
		endpoints <- url
	}
	m.cfg.Logger.Info("localesm: mapping started", "queue", m.cfg.QueueURL, "batch_size", m.cfg.BatchSize,
		"batching_window", m.cfg.BatchingWindow, "maximum_concurrency", m.cfg.MaximumConcurrency,
		"report_batch_item_failures", m.cfg.ReportBatchItemFailures, "function_urls", m.cfg.FunctionURLs)
	var wg sync.WaitGroup
	for range m.cfg.MaximumConcurrency {
		wg.Go(func() { m.poll(ctx, endpoints) })
	}
	wg.Wait()
	return nil
}

// poll is one poller: it takes a free execution environment, receives a batch for it,
// invokes and settles, and gives the environment back.
func (m *Mapping) poll(ctx context.Context, endpoints chan string) {
	for {
		var endpoint string
		select {
		case <-ctx.Done():
			return
		case endpoint = <-endpoints:
		}
		messages, err := m.gather(ctx)
		if err == nil && len(messages) > 0 {
			m.invoke(ctx, endpoint, messages)
		}
		endpoints <- endpoint
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.cfg.Logger.Error("localesm: receive failed", "queue", m.cfg.QueueURL, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// gather receives one batch: what one receive returns without a batching window; else
// up to BatchSize records, for at most BatchingWindow after the first one.
func (m *Mapping) gather(ctx context.Context) ([]types.Message, error) {
	var messages []types.Message
	var windowEnd time.Time
	size := 0
	for len(messages) < m.cfg.BatchSize {
		wait := m.cfg.WaitTime
		if len(messages) > 0 {
			remaining := time.Until(windowEnd)
			if m.cfg.BatchingWindow == 0 || remaining <= 0 {
				break
			}
			wait = min(wait, remaining.Truncate(time.Second))
		}
		output, err := m.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(m.cfg.QueueURL),
			MaxNumberOfMessages:         int32(min(sqsinfo.MaxBatchEntries, m.cfg.BatchSize-len(messages))),
			WaitTimeSeconds:             sqsx.WaitSeconds(wait.Truncate(time.Second)),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if len(messages) > 0 && ctx.Err() == nil {
				m.cfg.Logger.Error("localesm: receive failed; invoking with what was gathered", "error", err)
				return messages, nil
			}
			return messages, err
		}
		if len(output.Messages) == 0 && wait < time.Second && len(messages) > 0 {
			// Less than a second of window left: WaitTimeSeconds cannot express it, so
			// short polls are spaced out instead of spinning.
			select {
			case <-ctx.Done():
				return messages, nil
			case <-time.After(min(time.Until(windowEnd), 100*time.Millisecond)):
			}
			continue
		}
		for _, message := range output.Messages {
			// A record whose visibility timeout ran out while the window was open comes
			// back in the same batch: keep one record per message, with the newest receipt.
			if i := slices.IndexFunc(messages, func(m types.Message) bool {
				return aws.ToString(m.MessageId) == aws.ToString(message.MessageId)
			}); i >= 0 {
				messages[i] = message
				continue
			}
			size += len(aws.ToString(message.Body)) + 1024 // body plus envelope, roughly
			messages = append(messages, message)
		}
		if len(messages) > 0 && windowEnd.IsZero() {
			windowEnd = time.Now().Add(m.cfg.BatchingWindow)
		}
		if size >= MaxInvokePayload-64*1024 {
			break
		}
	}
	return messages, nil
}

// invoke sends the batch to the function and deletes what its response allows.
func (m *Mapping) invoke(ctx context.Context, endpoint string, messages []types.Message) {
	batch := Batch{Event: m.event(messages), Endpoint: endpoint}
	ids := make(map[string]bool, len(messages))
	for _, message := range messages {
		ids[aws.ToString(message.MessageId)] = true
	}
	payload, err := json.Marshal(batch.Event)
	if err != nil {
		panic(fmt.Sprintf("localesm: encoding the event: %v", err)) // events.SQSEvent always encodes
	}
	m.invocations.Add(1)
	batch.Start = time.Now()
	statusCode, header, body, err := m.post(ctx, endpoint, payload)
	batch.End = time.Now()
	batch.StatusCode, batch.Response = statusCode, body
	var failed []string
	if err == nil {
		failed, err = decide(statusCode, header, body, ids, m.cfg.ReportBatchItemFailures)
	}
	if err != nil {
		batch.Err = err
		failed = messageIDs(batch.Event)
		m.failedBatches.Add(1)
		m.cfg.Logger.Warn("localesm: whole batch failed; records stay for a retry", "queue", m.cfg.QueueURL,
			"records", len(messages), "error", err)
	}
	batch.Failed = failed
	m.retried.Add(int64(len(failed)))
	// The invocation's outcome is known: its deletes finish even when the mapping is
	// stopping, or the records would come back although the function handled them.
	settle, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	batch.Deleted, batch.DeleteErr = m.deleteExcept(settle, messages, failed)
	cancelSettle()
	m.deleted.Add(int64(len(batch.Deleted)))
	m.cfg.Logger.Info("localesm: batch done", "queue", m.cfg.QueueURL, "records", len(messages),
		"deleted", len(batch.Deleted), "retried", len(failed), "duration", batch.End.Sub(batch.Start))
	if m.cfg.OnBatch != nil {
		m.cfg.OnBatch(batch)
	}
}

func (m *Mapping) post(ctx context.Context, endpoint string, payload []byte) (int, http.Header, []byte, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, err
	}
	request.Header.Set("Content-Type", "application/json")
	response, err := m.cfg.HTTPClient.Do(request)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w: invoking %s: %v", ErrFunction, endpoint, err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return response.StatusCode, response.Header, body, fmt.Errorf("%w: reading the response of %s: %v", ErrFunction, endpoint, err)
	}
	return response.StatusCode, response.Header, body, nil
}

// deleteExcept deletes every message not in keep, ten per request. Entries a batch
// request reports failed (or leaves out) are retried once, then reported.
func (m *Mapping) deleteExcept(ctx context.Context, messages []types.Message, keep []string) ([]string, error) {
	kept := make(map[string]bool, len(keep))
	for _, id := range keep {
		kept[id] = true
	}
	var pending []types.Message
	for _, message := range messages {
		if !kept[aws.ToString(message.MessageId)] {
			pending = append(pending, message)
		}
	}
	var deleted []string
	var problems []error
	for attempt := 1; len(pending) > 0; attempt++ {
		handles := make([]string, len(pending))
		for i, message := range pending {
			handles[i] = aws.ToString(message.ReceiptHandle)
		}
		var retry []types.Message
		for i, result := range sqsx.DeleteMessages(ctx, m.client, m.cfg.QueueURL, handles) {
			message := pending[i]
			switch {
			case result.Err == nil:
				deleted = append(deleted, aws.ToString(message.MessageId))
			case attempt == 1 && sqsx.Retryable(result.Err):
				retry = append(retry, message)
			default:
				problems = append(problems, fmt.Errorf("localesm: deleting %s: %w", aws.ToString(message.MessageId), result.Err))
			}
		}
		pending = retry
	}
	err := errors.Join(problems...)
	if err != nil {
		m.cfg.Logger.Error("localesm: deleting records failed", "queue", m.cfg.QueueURL, "error", err)
	}
	return deleted, err
}
