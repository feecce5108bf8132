package opspage

import (
	"context"
	"encoding/json"
	"fmt"
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

// PollAPI is the part of the SQS client the page polls with. *sqs.Client satisfies it.
type PollAPI interface {
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ListMessageMoveTasks(ctx context.Context, input *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// MinInterval is the shortest refresh interval accepted.
const MinInterval = 500 * time.Millisecond

// refresher polls the queues' attributes at a bounded rate and keeps the last
// [Snapshot] and each queue's [history]: each interval, one GetQueueAttributes per queue
// and per dead-letter queue (a dead-letter queue shared by several queues is read once),
// one ListMessageMoveTasks per dead-letter queue, one GetQueueUrl per dead-letter queue
// the first time it is seen, and one read of the Counters. The number of pages open
// does not change it. It owns one goroutine, started by start and ended by stop.
type refresher struct {
	api      PollAPI
	queues   []string
	counters Counters
	ages     Ages // may be nil
	interval time.Duration
	now      func() time.Time

	mu        sync.RWMutex
	snapshot  Snapshot
	histories map[string]*history // queue URL -> its polls, for the charts
	polled    chan struct{}       // closed and replaced after every poll

	// Owned by the polling goroutine.
	dlqURLs map[string]string    // dead-letter queue ARN -> URL
	last    map[string]sample    // queue URL -> previous poll
	empty   map[string]time.Time // queue URL -> the last poll that saw it empty
	aged    map[string]ageRead   // queue URL -> the last read of Ages

	cancel context.CancelFunc
	done   chan struct{}
}

// sample is one poll of a queue: what the rates and the charts are computed from.
type sample struct {
	at                 time.Time
	depth, dlqDepth    int
	finished           Finished
	hasDLQ, hasMetrics bool
	// emptyFor is how long before at the queue was last seen empty (visible, in flight
	// and delayed all 0), an upper bound of its oldest message's age; emptySeen is false
	// when no poll since the page started saw it empty.
	emptyFor  time.Duration
	emptySeen bool
	// age is the oldest message's age from Ages, when ageKnown.
	age      time.Duration
	ageKnown bool
}

// ageRead is one answer of Ages.
type ageRead struct {
	at    time.Time
	age   time.Duration
	known bool
	err   string
}

// newRefresher returns a refresher of the queues at queueURLs, reading counters (may be
// nil) every interval (at least [MinInterval]) and keeping window of history.
func newRefresher(api PollAPI, queueURLs []string, counters Counters, interval, window time.Duration) (*refresher, error) {
	if interval < MinInterval {
		return nil, fmt.Errorf("opspage: refresh interval %s is below %s", interval, MinInterval)
	}
	if window < 0 || window > MaxHistory {
		return nil, fmt.Errorf("opspage: history %s is not between 0 and %s", window, MaxHistory)
	}
	if len(queueURLs) == 0 {
		return nil, fmt.Errorf("opspage: no queue to show")
	}
	r := &refresher{
		api: api, queues: queueURLs, counters: counters, interval: interval, now: time.Now,
		histories: map[string]*history{},
		polled:    make(chan struct{}),
		dlqURLs:   map[string]string{}, last: map[string]sample{}, empty: map[string]time.Time{}, aged: map[string]ageRead{},
	}
	for _, url := range queueURLs {
		r.histories[url] = newHistory(window, interval)
	}
	return r, nil
}

// start polls once and returns when that poll has ended, then polls every interval in
// its goroutine until stop is called or ctx ends. A second call does nothing.
func (r *refresher) start(ctx context.Context) {
	if r.done != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
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

// stop ends the polling goroutine and waits for it to return.
func (r *refresher) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
}

// snapshotNow returns the last poll's snapshot.
func (r *refresher) snapshotNow() Snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.snapshot
}

// historyOf returns a copy of the kept polls of the queue at url, oldest first.
func (r *refresher) historyOf(url string) []sample {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if h := r.histories[url]; h != nil {
		return h.samples()
	}
	return nil
}

// polledChan returns a channel closed after the next poll ends.
func (r *refresher) polledChan() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.polled
}

func (r *refresher) poll(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, max(r.interval, 10*time.Second))
	defer cancel()
	snapshot := Snapshot{Queues: make([]QueueSnapshot, 0, len(r.queues))}
	var finished map[string]Finished
	if r.counters != nil {
		var err error
		if finished, err = r.counters.Finished(ctx); err != nil {
			snapshot.MetricsError = err.Error()
			finished = nil
		}
	}
	dlqs := map[string]*DLQSnapshot{}
	current := make([]sample, 0, len(r.queues))
	for _, url := range r.queues {
		q, s := r.pollQueue(ctx, url, dlqs, finished)
		snapshot.Queues = append(snapshot.Queues, q)
		current = append(current, s)
	}
	snapshot.At = r.now()
	if parent.Err() != nil { // stopped during the poll: its errors say nothing about the queues
		return
	}
	r.mu.Lock()
	r.snapshot = snapshot
	for i, url := range r.queues {
		if snapshot.Queues[i].Error == "" {
			r.histories[url].add(current[i])
		}
	}
	close(r.polled)
	r.polled = make(chan struct{})
	r.mu.Unlock()
}

// pollQueue reads one queue (and its dead-letter queue, unless dlqs has it already)
// and returns its snapshot and its sample.
func (r *refresher) pollQueue(ctx context.Context, url string, dlqs map[string]*DLQSnapshot, finished map[string]Finished) (QueueSnapshot, sample) {
	q := QueueSnapshot{Name: queueName(url), URL: url}
	attributes, err := allAttributes(ctx, r.api, url)
	if err != nil {
		q.Error = err.Error()
		return q, sample{}
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
	now := r.now()
	current := sample{at: now, depth: q.Visible + q.InFlight + q.Delayed, hasDLQ: q.DLQ != nil && q.DLQ.Error == ""}
	if q.DLQ != nil {
		current.dlqDepth = q.DLQ.Depth
	}
	if finished != nil {
		current.finished, current.hasMetrics = finished[q.Name], true
	}
	if current.depth == 0 {
		r.empty[url] = now
	}
	if at, ok := r.empty[url]; ok {
		current.emptyFor, current.emptySeen = now.Sub(at), true
	}
	if r.ages != nil {
		read, ok := r.aged[url]
		if !ok || now.Sub(read.at) >= AgeInterval {
			read = ageRead{at: now}
			var err error
			if read.age, read.known, err = r.ages.OldestAge(ctx, q.Name); err != nil {
				read.known, read.err = false, err.Error()
			}
			r.aged[url] = read
		}
		current.age, current.ageKnown, q.AgeError = read.age, read.known, read.err
	}
	q.Rates = rates(r.last[url], current, r.counters != nil)
	r.last[url] = current
	return q, current
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

func (r *refresher) pollDLQ(ctx context.Context, arn string) *DLQSnapshot {
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
func (r *refresher) dlqURL(ctx context.Context, arn string) (string, error) {
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

func allAttributes(ctx context.Context, api PollAPI, url string) (map[string]string, error) {
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
