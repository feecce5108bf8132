package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// multiQueueAPI is a fake of several standard queues, each holding a number of messages
// (or bottomless) that ReceiveMessage hands out at once; an empty queue answers empty
// after a short wait (a quick long poll). Every queue has a redrive policy.
type multiQueueAPI struct {
	*fakeAPI // deletes, visibility changes and sends succeed

	mu     sync.Mutex
	queues map[string]*fakeQueue
}

// fakeQueue is one queue of a multiQueueAPI.
type fakeQueue struct {
	name      string
	remaining int // -1: bottomless
	jobType   string
	sent      int

	// emptyWait is how long an empty answer takes (a long poll); 0: 20 ms.
	emptyWait time.Duration
	// latency is how long every answer takes (a round trip).
	latency time.Duration
	// before, if set, is called (the fake's lock held) at the start of each receive.
	before func(q *fakeQueue)

	// noRedrive leaves the redrive policy out of the queue's attributes.
	noRedrive bool

	receives    int
	visibility  []int32 // VisibilityTimeout of each call
	empties     int     // empty answers given
	inFlight    int     // ReceiveMessage calls in flight
	maxInFlight int
	asked       []int32 // MaxNumberOfMessages of each call
}

func fakeQueueURLFor(name string) string {
	return "https://sqs.us-east-1.amazonaws.com/000000000000/" + name
}

func newMultiQueueAPI(queues ...*fakeQueue) *multiQueueAPI {
	api := &multiQueueAPI{fakeAPI: newFakeAPI(), queues: make(map[string]*fakeQueue)}
	for _, q := range queues {
		api.queues[fakeQueueURLFor(q.name)] = q
	}
	return api
}

func (f *multiQueueAPI) queue(input string) *fakeQueue {
	q, ok := f.queues[input]
	if !ok {
		panic("fake: no queue " + input)
	}
	return q
}

func (f *multiQueueAPI) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	q := f.queue(aws.ToString(input.QueueUrl))
	if q.before != nil {
		q.before(q)
	}
	q.receives++
	q.visibility = append(q.visibility, input.VisibilityTimeout)
	q.asked = append(q.asked, input.MaxNumberOfMessages)
	q.inFlight++
	q.maxInFlight = max(q.maxInFlight, q.inFlight)
	var messages []types.Message
	for range input.MaxNumberOfMessages {
		if q.remaining == 0 {
			break
		}
		if q.remaining > 0 {
			q.remaining--
		}
		q.sent++
		message := fakeMessage(fmt.Sprintf("%s-%d", q.name, q.sent), 1)
		if q.jobType != "" {
			message.MessageAttributes = map[string]types.MessageAttributeValue{
				sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String(q.jobType)},
			}
		}
		messages = append(messages, message)
	}
	wait := q.emptyWait
	if wait == 0 {
		wait = 20 * time.Millisecond
	}
	latency := q.latency
	f.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	if len(messages) == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	f.mu.Lock()
	q.inFlight--
	if len(messages) == 0 {
		q.empties++
	}
	f.mu.Unlock()
	if len(messages) == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return &sqs.ReceiveMessageOutput{Messages: messages}, nil
}

func (f *multiQueueAPI) GetQueueAttributes(_ context.Context, input *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	url := aws.ToString(input.QueueUrl)
	name := url[strings.LastIndex(url, "/")+1:]
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": fakeDLQARN, "maxReceiveCount": 5})
	attributes := map[string]string{
		"QueueArn":          "arn:aws:sqs:us-east-1:000000000000:" + name,
		"VisibilityTimeout": "30",
		"RedrivePolicy":     string(policy),
	}
	f.mu.Lock()
	if f.queue(url).noRedrive {
		delete(attributes, "RedrivePolicy")
	}
	f.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: attributes}, nil
}

// stats returns a copy of queue name's counters.
func (f *multiQueueAPI) stats(name string) fakeQueue {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := *f.queue(fakeQueueURLFor(name))
	q.asked = append([]int32(nil), q.asked...)
	q.visibility = append([]int32(nil), q.visibility...)
	return q
}

// perQueueCounter counts handled messages by queue name (the message id's prefix).
type perQueueCounter struct {
	mu     sync.Mutex
	counts map[string]int
	total  int
}

func (c *perQueueCounter) handler(delay time.Duration) sqsworker.Handler {
	return sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		c.mu.Lock()
		if c.counts == nil {
			c.counts = make(map[string]int)
		}
		name := m.ID[:strings.LastIndex(m.ID, "-")]
		c.counts[name]++
		c.total++
		c.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		return nil
	})
}

func (c *perQueueCounter) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out, c.total
}

// TestMultiQueueWeightedShares: three bottomless queues of weights 6, 3 and 1 share one
// pool of 10 slots: the handled messages split within 2 points of 60/30/10, also when
// a receive takes longer than a handler (a queue's receive in flight does not hand its
// share to the others).
func TestMultiQueueWeightedShares(t *testing.T) {
	t.Parallel()
	for _, latency := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(fmt.Sprintf("receive_latency_%s", latency), func(t *testing.T) {
			t.Parallel()
			testWeightedShares(t, latency)
		})
	}
}

func testWeightedShares(t *testing.T, latency time.Duration) {
	api := newMultiQueueAPI(&fakeQueue{name: "critical", remaining: -1, latency: latency}, &fakeQueue{name: "default", remaining: -1, latency: latency}, &fakeQueue{name: "low", remaining: -1, latency: latency})
	var counter perQueueCounter
	startServer(t, api, Config{
		Concurrency: 10,
		Queues: []QueueConfig{
			{URL: fakeQueueURLFor("critical"), Weight: 6},
			{URL: fakeQueueURLFor("default"), Weight: 3},
			{URL: fakeQueueURLFor("low"), Weight: 1},
		},
		Logger: quietLogger(),
	}, counter.handler(time.Millisecond))
	// The sample needs 3000 messages, however fast this machine handles them now (the
	// race detector and a loaded machine slow it several times): the wait for them is
	// derived from the time the first 300 took.
	began := time.Now()
	testenv.Eventually(t, time.Minute, "300 messages handled", func() bool { _, total := counter.snapshot(); return total >= 300 })
	testenv.Eventually(t, max(10*time.Second, 30*time.Since(began)), "3000 messages handled", func() bool { _, total := counter.snapshot(); return total >= 3000 })
	counts, total := counter.snapshot()
	for name, want := range map[string]float64{"critical": 0.6, "default": 0.3, "low": 0.1} {
		if share := float64(counts[name]) / float64(total); share < want-0.02 || share > want+0.02 {
			t.Errorf("%s: %.3f of %d handled (%v), want %.2f ± 0.02", name, share, total, counts, want)
		}
	}
}

// TestMultiQueueIdleQueuesOneReceiveEach: beside a busy queue, two empty queues keep
// one ReceiveMessage call in flight each, asking for one message, though each queue may
// have three receivers.
func TestMultiQueueIdleQueuesOneReceiveEach(t *testing.T) {
	t.Parallel()
	api := newMultiQueueAPI(&fakeQueue{name: "busy", remaining: -1}, &fakeQueue{name: "idle1"}, &fakeQueue{name: "idle2"})
	var counter perQueueCounter
	startServer(t, api, Config{
		Concurrency: 30,
		Receivers:   3,
		Queues: []QueueConfig{
			{URL: fakeQueueURLFor("busy")},
			{URL: fakeQueueURLFor("idle1")},
			{URL: fakeQueueURLFor("idle2")},
		},
	}, counter.handler(time.Millisecond))
	eventually(t, "20 receives on each idle queue", func() bool {
		return api.stats("idle1").receives >= 20 && api.stats("idle2").receives >= 20
	})
	for _, name := range []string{"idle1", "idle2"} {
		stats := api.stats(name)
		if stats.maxInFlight != 1 {
			t.Errorf("%s: %d ReceiveMessage calls in flight at once, want 1", name, stats.maxInFlight)
		}
		for i, asked := range stats.asked {
			if asked != 1 {
				t.Errorf("%s: receive %d asked for %d messages, want 1 (a probe)", name, i, asked)
				break
			}
		}
	}
}

// TestMultiQueueStrictPriority: with strict priority the low queue is first polled after
// the high queue answered empty, though both are full from the start: no low message is
// received while the high queue has any. (When each handler starts is up to the Go
// scheduler; TestEmulatorStrictPriority checks the start order with a margin of one
// long poll.)
func TestMultiQueueStrictPriority(t *testing.T) {
	t.Parallel()
	high := &fakeQueue{name: "high", remaining: 95}
	var early []string
	low := &fakeQueue{name: "low", remaining: 50, before: func(*fakeQueue) {
		if high.remaining > 0 || high.empties == 0 {
			early = append(early, fmt.Sprintf("low polled with %d high messages left, %d empty answers", high.remaining, high.empties))
		}
	}}
	api := newMultiQueueAPI(high, low)
	var counter perQueueCounter
	startServer(t, api, Config{
		Concurrency: 10,
		Receivers:   2,
		Priority:    Strict,
		Queues: []QueueConfig{
			{URL: fakeQueueURLFor("low"), Weight: 1},
			{URL: fakeQueueURLFor("high"), Weight: 2},
		},
	}, counter.handler(time.Millisecond))
	eventually(t, "all 145 handled", func() bool { _, total := counter.snapshot(); return total == 145 })
	api.mu.Lock()
	if len(early) > 0 {
		t.Errorf("the low queue was polled before the high one came back empty: %v", early)
	}
	api.mu.Unlock()
	if counts, _ := counter.snapshot(); counts["high"] != 95 || counts["low"] != 50 {
		t.Errorf("handled %v, want high:95 low:50", counts)
	}
}

// TestMultiQueueHandlers: each queue's messages go to its own handler, or to New's for
// a queue without one.
func TestMultiQueueHandlers(t *testing.T) {
	t.Parallel()
	api := newMultiQueueAPI(&fakeQueue{name: "a", remaining: 7}, &fakeQueue{name: "b", remaining: 5})
	var own, fallback perQueueCounter
	startServer(t, api, Config{Queues: []QueueConfig{
		{URL: fakeQueueURLFor("a"), Handler: own.handler(0)},
		{URL: fakeQueueURLFor("b")},
	}}, fallback.handler(0))
	eventually(t, "12 handled", func() bool {
		_, a := own.snapshot()
		_, b := fallback.snapshot()
		return a+b == 12
	})
	if counts, _ := own.snapshot(); counts["a"] != 7 || counts["b"] != 0 {
		t.Errorf("queue a's handler got %v, want a:7", counts)
	}
	if counts, _ := fallback.snapshot(); counts["b"] != 5 || counts["a"] != 0 {
		t.Errorf("New's handler got %v, want b:5", counts)
	}
}

// TestJobTypeMaxConcurrency: at most 2 handlers of a limited job type run at once; the
// messages over the limit wait received, held (their heartbeats running), and all are
// handled, none lost or released.
func TestJobTypeMaxConcurrency(t *testing.T) {
	t.Parallel()
	api := newMultiQueueAPI(&fakeQueue{name: "jobs", remaining: 10, jobType: "slow"})
	var running, peak, handled atomic.Int64
	release := make(chan struct{})
	server := startServer(t, api, Config{
		Concurrency:         10,
		HeartbeatInterval:   50 * time.Millisecond,
		VisibilityExtension: 10 * time.Second,
		Queues:              []QueueConfig{{URL: fakeQueueURLFor("jobs")}},
		JobTypeLimits:       map[string]Limit{"slow": {MaxConcurrency: 2}},
	}, sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			old := peak.Load()
			if now <= old || peak.CompareAndSwap(old, now) {
				break
			}
		}
		<-release
		handled.Add(1)
		return nil
	}))
	eventually(t, "10 received, 2 running", func() bool { return server.Stats().Received == 10 && running.Load() == 2 })
	if got := server.Stats().InFlight; got != 10 {
		t.Errorf("InFlight = %d, want 10 (8 waiting for the job type's limit, held)", got)
	}
	// The waiting messages' heartbeats run: every one of the 10 is extended.
	eventually(t, "heartbeats for all 10 held messages", func() bool {
		_, _, batches, _ := api.recorded()
		extended := map[string]bool{}
		for _, batch := range batches {
			for _, entry := range batch.Entries {
				if entry.VisibilityTimeout > 0 {
					extended[aws.ToString(entry.ReceiptHandle)] = true
				}
			}
		}
		return len(extended) == 10
	})
	close(release)
	eventually(t, "10 handled", func() bool { return handled.Load() == 10 && server.Stats().Deleted == 10 })
	if peak.Load() != 2 {
		t.Errorf("peak running = %d, want 2", peak.Load())
	}
	if stats := server.Stats(); stats.Released != 0 {
		t.Errorf("Released = %d, want 0", stats.Released)
	}
}

// TestQueueRateLimitAsksOnlyForFreeTokens: a queue limited to 50/s with burst 1 is
// polled for one message at a time (no message received ahead of its token).
func TestQueueRateLimitAsksOnlyForFreeTokens(t *testing.T) {
	t.Parallel()
	api := newMultiQueueAPI(&fakeQueue{name: "limited", remaining: 20}, &fakeQueue{name: "free", remaining: 30})
	var counter perQueueCounter
	startServer(t, api, Config{Queues: []QueueConfig{
		{URL: fakeQueueURLFor("limited"), Limit: Limit{RatePerSecond: 50}},
		{URL: fakeQueueURLFor("free")},
	}}, counter.handler(0))
	eventually(t, "50 handled", func() bool { _, total := counter.snapshot(); return total == 50 })
	for i, asked := range api.stats("limited").asked {
		if asked != 1 {
			t.Fatalf("rate-limited receive %d asked for %d messages, want 1 (burst 1)", i, asked)
		}
	}
	if free := api.stats("free").asked; len(free) == 0 || free[0] == 1 && free[1] < 2 {
		t.Errorf("free queue receives %v: want it to ask for more than one message once busy", free)
	}
}

// TestMultiQueueConfigErrors: every problem of Config.Queues is reported, each naming
// its field.
func TestMultiQueueConfigErrors(t *testing.T) {
	t.Parallel()
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	_, err := New(newFakeAPI(), Config{
		QueueURL: fakeQueueURL,
		Priority: Priority(7),
		Queues: []QueueConfig{
			{URL: "u1", Weight: -1, MaxSlots: -1, Limit: Limit{RatePerSecond: -2, RateBurst: 3}},
			{URL: "u1"},
			{},
		},
		JobTypeLimits: map[string]Limit{"t": {RateBurst: 2}},
	}, handler)
	if err == nil {
		t.Fatal("New accepted the configuration")
	}
	for _, want := range []string{
		"Config.Priority 7",
		"Config.QueueURL and Config.Queues are both set",
		"Config.Queues[0].Weight -1 is negative",
		"Config.Queues[0].MaxSlots -1 is negative",
		"Config.Queues[0].Limit.RatePerSecond -2",
		"Config.Queues[1].URL u1 repeats Config.Queues[0]",
		"Config.Queues[2].URL is empty",
		`Config.JobTypeLimits["t"].RateBurst 2 is set without RatePerSecond`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := New(newFakeAPI(), Config{Queues: []QueueConfig{{URL: "u1"}}}, nil); err == nil || !strings.Contains(err.Error(), "Config.Queues[0].Handler is nil") {
		t.Errorf("a queue without a handler and no New handler: error %v", err)
	}
}

// TestLimiterHeadroom: a limit of r per second fills its bucket at 0.99 r, with the
// burst asked for (1 by default).
func TestLimiterHeadroom(t *testing.T) {
	t.Parallel()
	lim := newLimiter(Limit{RatePerSecond: 5})
	if got := float64(lim.bucket.Limit()); got != 5*rateHeadroom || lim.bucket.Burst() != 1 {
		t.Errorf("bucket = %v/s burst %d, want %v/s burst 1", got, lim.bucket.Burst(), 5*rateHeadroom)
	}
	if newLimiter(Limit{}) != nil {
		t.Error("a zero Limit made a limiter")
	}
}

// TestMultiQueuePerQueueSettings: each queue has its own receive visibility and
// backoff (QueueConfig overriding Config), and Start checks each queue's redrive policy,
// naming the queue it refuses.
func TestMultiQueuePerQueueSettings(t *testing.T) {
	t.Parallel()
	api := newMultiQueueAPI(&fakeQueue{name: "a", remaining: 1}, &fakeQueue{name: "b", remaining: 1})
	failing := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return errors.New("try again") })
	server := startServer(t, api, Config{
		ReceiveVisibility: 20 * time.Second,
		Backoff:           sqsworker.Backoff{Base: 3 * time.Second, Cap: 3 * time.Second, Jitter: sqsworker.JitterNone},
		Queues: []QueueConfig{
			{URL: fakeQueueURLFor("a")},
			{URL: fakeQueueURLFor("b"), ReceiveVisibility: 7 * time.Second, Backoff: sqsworker.Backoff{Base: 11 * time.Second, Cap: 11 * time.Second, Jitter: sqsworker.JitterNone}},
		},
		Logger: quietLogger(),
	}, failing)
	eventually(t, "both messages rescheduled", func() bool {
		_, visibilities, _, _ := api.recorded()
		return len(visibilities) == 2 && server.Stats().InFlight == 0
	})
	_, visibilities, _, _ := api.recorded()
	got := map[string]int32{}
	for _, v := range visibilities {
		got[strings.TrimPrefix(aws.ToString(v.ReceiptHandle), "rh-")] = v.VisibilityTimeout
	}
	if got["a-1"] != 3 || got["b-1"] != 11 {
		t.Errorf("retry visibility = %v, want a-1: 3 (Config.Backoff) and b-1: 11 (its own)", got)
	}
	for name, want := range map[string]int32{"a": 20, "b": 7} {
		for i, visibility := range api.stats(name).visibility {
			if visibility != want {
				t.Errorf("queue %s receive %d: VisibilityTimeout %d, want %d", name, i, visibility, want)
				break
			}
		}
	}

	refused := newMultiQueueAPI(&fakeQueue{name: "ok"}, &fakeQueue{name: "unbounded", noRedrive: true})
	server, err := New(refused, Config{Queues: []QueueConfig{{URL: fakeQueueURLFor("ok")}, {URL: fakeQueueURLFor("unbounded")}}}, failing)
	if err != nil {
		t.Fatal(err)
	}
	err = server.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), fakeQueueURLFor("unbounded")+" has no redrive policy") || strings.Contains(err.Error(), fakeQueueURLFor("ok")+" ") {
		t.Fatalf("Start: %v; want the queue without a redrive policy named, and only it", err)
	}
	if refused.stats("ok").receives != 0 {
		t.Error("a refused start received messages")
	}
}
