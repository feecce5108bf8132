package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// RefresherAPI is the part of the SQS client the [Refresher] uses. *sqs.Client
// satisfies it.
type RefresherAPI interface {
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// MinInterval is the shortest poll interval a [Refresher] accepts.
const MinInterval = 500 * time.Millisecond

// Refresher polls the queues' attributes at a bounded rate and keeps the last
// [Snapshot]: each interval, one GetQueueAttributes per queue and per dead-letter queue
// (a dead-letter queue shared by several queues is read once), one
// ListMessageMoveTasks per dead-letter queue, one GetQueueUrl per dead-letter queue the
// first time it is seen, and one scrape of each metrics URL. The number of pages open
// does not change it. It owns one goroutine, started by Start and ended by Stop.
type Refresher struct {
	api      RefresherAPI
	queues   []string
	metrics  []string
	interval time.Duration
	http     *http.Client

	mu       sync.RWMutex
	snapshot Snapshot
	polled   chan struct{} // closed and replaced after every poll

	// Owned by the polling goroutine.
	dlqURLs map[string]string // dead-letter queue ARN -> URL
	last    map[string]sample // queue URL -> previous poll

	stop context.CancelFunc
	done chan struct{}
}

type sample struct {
	at                 time.Time
	depth, dlqDepth    int
	finished           finishedCounts
	hasDLQ, hasMetrics bool
}

// NewRefresher returns a refresher of the queues at queueURLs, scraping metricsURLs
// (workers' /metrics, may be empty) every interval (at least [MinInterval]).
func NewRefresher(api RefresherAPI, queueURLs, metricsURLs []string, interval time.Duration) (*Refresher, error) {
	if interval < MinInterval {
		return nil, fmt.Errorf("ui: refresh interval %s is below %s", interval, MinInterval)
	}
	if len(queueURLs) == 0 {
		return nil, fmt.Errorf("ui: no queue to show")
	}
	return &Refresher{
		api: api, queues: queueURLs, metrics: metricsURLs, interval: interval,
		http:    &http.Client{Timeout: max(interval, 5*time.Second)},
		polled:  make(chan struct{}),
		dlqURLs: map[string]string{}, last: map[string]sample{},
	}, nil
}

// Interval is the poll interval.
func (r *Refresher) Interval() time.Duration { return r.interval }

// Start polls once and returns when that poll has ended (so that the first page shows
// every queue), then polls every interval in its goroutine until Stop is called or ctx
// ends. Call it once.
func (r *Refresher) Start(ctx context.Context) {
	ctx, r.stop = context.WithCancel(ctx)
	r.done = make(chan struct{})
	r.poll(ctx)
	go func() {
		defer close(r.done)
		ticker := time.NewTicker(r.interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			r.poll(ctx)
		}
	}()
}

// Stop ends the polling goroutine and waits for it to return.
func (r *Refresher) Stop() {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
}

// Snapshot returns the last poll's snapshot.
func (r *Refresher) Snapshot() Snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.snapshot
}

// Polled returns a channel closed after the next poll ends.
func (r *Refresher) Polled() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.polled
}

func (r *Refresher) poll(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, max(r.interval, 10*time.Second))
	defer cancel()
	snapshot := Snapshot{Queues: make([]QueueSnapshot, 0, len(r.queues))}
	var finished map[string]finishedCounts
	if len(r.metrics) > 0 {
		var err error
		if finished, err = scrapeFinished(ctx, r.http, r.metrics); err != nil {
			snapshot.MetricsError = err.Error()
		}
	}
	dlqs := map[string]*DLQSnapshot{}
	for _, url := range r.queues {
		snapshot.Queues = append(snapshot.Queues, r.pollQueue(ctx, url, dlqs, finished))
	}
	snapshot.At = time.Now()
	if parent.Err() != nil { // stopped during the poll: its errors say nothing about the queues
		return
	}
	r.mu.Lock()
	r.snapshot = snapshot
	close(r.polled)
	r.polled = make(chan struct{})
	r.mu.Unlock()
}

func (r *Refresher) pollQueue(ctx context.Context, url string, dlqs map[string]*DLQSnapshot, finished map[string]finishedCounts) QueueSnapshot {
	q := QueueSnapshot{Name: queueName(url), URL: url}
	attributes, err := allAttributes(ctx, r.api, url)
	if err != nil {
		q.Error = err.Error()
		return q
	}
	q.ARN = attributes[string(types.QueueAttributeNameQueueArn)]
	q.FIFO = attributes[string(types.QueueAttributeNameFifoQueue)] == "true"
	q.Visible, q.InFlight, q.Delayed = counts(attributes)
	if policy := attributes[string(types.QueueAttributeNameRedrivePolicy)]; policy != "" {
		arn, maxReceives, err := parsePolicy(policy)
		if err != nil {
			q.Error = err.Error()
		} else {
			q.MaxReceiveCount = maxReceives
			if q.DLQ = dlqs[arn]; q.DLQ == nil {
				q.DLQ = r.pollDLQ(ctx, arn)
				dlqs[arn] = q.DLQ
			}
		}
	}
	now := time.Now()
	current := sample{at: now, depth: q.Visible + q.InFlight + q.Delayed, hasDLQ: q.DLQ != nil && q.DLQ.Error == ""}
	if q.DLQ != nil {
		current.dlqDepth = q.DLQ.Depth
	}
	if finished != nil {
		current.finished, current.hasMetrics = finished[q.Name], true
	}
	q.Rates = rates(r.last[url], current, len(r.metrics) > 0)
	r.last[url] = current
	return q
}

// rates compares two polls of a queue.
func rates(previous, current sample, fromMetrics bool) Rates {
	rates := Rates{Source: RatesFromSQS}
	if fromMetrics {
		rates.Source = RatesFromMetrics
	}
	seconds := current.at.Sub(previous.at).Seconds()
	if previous.at.IsZero() || seconds <= 0 {
		return rates
	}
	if fromMetrics {
		if !previous.hasMetrics || !current.hasMetrics {
			return rates
		}
		total, failed := current.finished.Total-previous.finished.Total, current.finished.Failed-previous.finished.Failed
		if total < 0 || failed < 0 { // a worker restarted: its counters began again
			total, failed = current.finished.Total, current.finished.Failed
		}
		rates.Known, rates.PerSecond = true, total/seconds
		if total > 0 {
			rates.Failure = failed / total
		}
		return rates
	}
	rates.Known = true
	rates.PerSecond = max(0, float64(previous.depth-current.depth)) / seconds
	if previous.hasDLQ && current.hasDLQ {
		rates.Failure = max(0, float64(current.dlqDepth-previous.dlqDepth)) / seconds * 60
	}
	return rates
}

func (r *Refresher) pollDLQ(ctx context.Context, arn string) *DLQSnapshot {
	dlq := &DLQSnapshot{Name: queueName(arn), ARN: arn}
	url, err := r.dlqURL(ctx, arn)
	if err != nil {
		dlq.Error = err.Error()
		return dlq
	}
	dlq.URL = url
	attributes, err := allAttributes(ctx, r.api, url)
	if err != nil {
		dlq.Error = err.Error()
		return dlq
	}
	dlq.Visible, dlq.InFlight, dlq.Delayed = counts(attributes)
	dlq.Depth = dlq.Visible + dlq.InFlight + dlq.Delayed
	if seconds, err := strconv.Atoi(attributes[string(types.QueueAttributeNameMessageRetentionPeriod)]); err == nil {
		dlq.Retention = time.Duration(seconds) * time.Second
	}
	tasks, err := redrive.ListMoveTasksOfARN(ctx, r.api, arn, sqsinfo.MaxListedMoveTasks)
	if err != nil {
		dlq.Error = err.Error()
		return dlq
	}
	dlq.MoveTasks = tasks
	return dlq
}

// dlqURL resolves a dead-letter queue's ARN to its URL, once.
func (r *Refresher) dlqURL(ctx context.Context, arn string) (string, error) {
	if url, ok := r.dlqURLs[arn]; ok {
		return url, nil
	}
	parsed, err := sqsinfo.ParseQueueARN(arn)
	if err != nil {
		return "", err
	}
	output, err := r.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parsed.Name), QueueOwnerAWSAccountId: aws.String(parsed.Account)})
	if err != nil {
		return "", sqsinfo.QueueError(arn, err)
	}
	r.dlqURLs[arn] = aws.ToString(output.QueueUrl)
	return r.dlqURLs[arn], nil
}

func allAttributes(ctx context.Context, api RefresherAPI, url string) (map[string]string, error) {
	output, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, sqsinfo.QueueError(url, err)
	}
	return output.Attributes, nil
}

func counts(attributes map[string]string) (visible, inFlight, delayed int) {
	number := func(name types.QueueAttributeName) int {
		n, _ := strconv.Atoi(attributes[string(name)])
		return n
	}
	return number(types.QueueAttributeNameApproximateNumberOfMessages),
		number(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		number(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
}

// parsePolicy reads a RedrivePolicy attribute; SQS has returned maxReceiveCount both as
// a number and as a string.
func parsePolicy(text string) (arn string, maxReceiveCount int, err error) {
	var policy struct {
		DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(text), &policy); err != nil {
		return "", 0, fmt.Errorf("redrive policy %q is not JSON: %w", text, err)
	}
	maxReceiveCount, _ = strconv.Atoi(strings.Trim(string(policy.MaxReceiveCount), `"`))
	return policy.DeadLetterTargetARN, maxReceiveCount, nil
}

// queueName returns the last segment of a queue URL or ARN.
func queueName(ref string) string {
	if i := strings.LastIndexAny(ref, "/:"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}
