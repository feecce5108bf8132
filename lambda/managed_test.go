package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/emf"
)

// managedInvocations is how many invocations run at once in TestConcurrentInvocations,
// as Lambda Managed Instances run them in one execution environment.
const managedInvocations = 8

// managedJob is the body of a record in TestConcurrentInvocations.
type managedJob struct {
	Key       string `json:"key"`
	Gate      bool   `json:"gate"`      // wait until every invocation has a handler running
	Fail      bool   `json:"fail"`      // an ordinary (retryable) error
	Permanent bool   `json:"permanent"` // a permanent error: dead-lettered by the adapter
}

// managedEvent is invocation i's batch, from queue orders-i, six records:
//
//	m0: a gate (waits until the gates of all invocations are running), then succeeds;
//	m1..m3: fail with an ordinary error when bit j-1 of i is set, else succeed;
//	m4: a permanent error when i is even, else succeeds;
//	m5: key "shared" in invocations 0 and 1 (one job delivered twice, to two concurrent
//	    invocations), a key of its own elsewhere; it succeeds after the gates open.
//
// So each invocation fails a different set of records, and its EMF line, counts and
// dead-letter sends differ from every other's.
func managedEvent(i int) events.SQSEvent {
	arn := fmt.Sprintf("arn:aws:sqs:us-east-2:123456789012:orders-%d", i)
	now := time.Now()
	var event events.SQSEvent
	for j := range 6 {
		body := managedJob{Key: fmt.Sprintf("%d-r%d", i, j)}
		switch {
		case j == 0:
			body.Gate = true
		case j <= 3:
			body.Fail = i&(1<<(j-1)) != 0
		case j == 4:
			body.Permanent = i%2 == 0
		case j == 5 && i < 2:
			body.Key, body.Gate = "shared", true
		}
		encoded, _ := json.Marshal(body)
		id := fmt.Sprintf("inv%d-m%d", i, j)
		event.Records = append(event.Records, events.SQSMessage{
			MessageId:     id,
			ReceiptHandle: "rh-" + id,
			Body:          string(encoded),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    strconv.FormatInt(now.Add(-2*time.Second).UnixMilli(), 10),
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10),
			},
			EventSource:    "aws:sqs",
			EventSourceARN: arn,
			AWSRegion:      "us-east-2",
		})
	}
	return event
}

// perQueueSQS is a recordingSQS whose GetQueueAttributes answers with the ARN of the
// queue asked about, so a dead-letter send shows which queue's description it used.
type perQueueSQS struct{ *recordingSQS }

func (f perQueueSQS) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	output, err := f.recordingSQS.GetQueueAttributes(ctx, input, opts...)
	if err == nil {
		name := aws.ToString(input.QueueUrl)
		output.Attributes["QueueArn"] = "arn:aws:sqs:us-east-2:123456789012:" + name[strings.LastIndexByte(name, '/')+1:]
	}
	return output, err
}

// gates opens once n gate handlers are waiting at once.
type gates struct {
	mu      sync.Mutex
	waiting int
	n       int
	open    chan struct{}
}

func newGates(n int) *gates { return &gates{n: n, open: make(chan struct{})} }

// wait blocks until the gates are open or ctx ends.
func (g *gates) wait(ctx context.Context) error {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gate: %d of %d invocations reached their handlers: %w", g.waiting, g.n, ctx.Err())
	}
}

// TestConcurrentInvocations runs 8 invocations of one BatchHandler at once, as Lambda
// Managed Instances do in one execution environment (aws-lambda-go runs
// AWS_LAMBDA_MAX_CONCURRENCY invoke loops in one process). The handler is wrapped in the
// idempotency middleware and the EMF recorder observes it. Every invocation goes through
// aws-lambda-go's handler wrapper (JSON in, JSON out) and has a handler still running
// while all the others have one too (the gates). Exact outcomes: each response lists
// exactly its own failing records; each EMF line counts only its own invocation; every
// side effect happens once (the job delivered to two invocations at once included),
// every permanent failure is sent to the dead-letter queue once, every failing record's
// visibility is changed once; each log line carries its own invocation's request id.
// Run with -race.
func TestConcurrentInvocations(t *testing.T) {
	t.Parallel()
	fake := &recordingSQS{}
	var logs, metrics bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
	recorder := emf.New(emf.Config{Namespace: "managed", Writer: &syncWriter{w: &metrics}})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	gate := newGates(managedInvocations + 1) // the gate of every invocation, and the "shared" job once
	var mu sync.Mutex
	calls, effects := map[string]int{}, map[string]int{}
	job := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		var body managedJob
		if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
			return sqsworker.Permanent("MalformedBody", err)
		}
		mu.Lock()
		calls[body.Key]++
		mu.Unlock()
		if body.Gate {
			if err := gate.wait(ctx); err != nil {
				return err
			}
		}
		switch {
		case body.Fail:
			return errors.New("downstream 503")
		case body.Permanent:
			return sqsworker.Permanent("PoisonPill", errors.New("bad order "+body.Key))
		}
		mu.Lock()
		effects[body.Key]++
		mu.Unlock()
		return nil
	})
	handler := sqsworker.Chain(job, idempotency.Middleware(idempotency.NewMemoryStore(), idempotency.Config{
		KeyFunc:       idempotency.KeyFromJSONField("key"),
		DuplicateWait: time.Minute, // the duplicate of "shared" waits for the original, which waits for the gates
		Logger:        logger,
	}))
	batch := newBatch(t, handler, lambda.WithSQSClient(perQueueSQS{fake}), lambda.WithLogger(logger), lambda.WithObserver(recorder), noJitter)
	handle := recorder.Wrap(batch.Handle)

	responses := make([]events.SQSEventResponse, managedInvocations)
	var wg sync.WaitGroup
	for i := range managedInvocations {
		wg.Go(func() {
			payload, err := json.Marshal(managedEvent(i))
			if err != nil {
				t.Error(err)
				return
			}
			invocationCtx := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprintf("req-%d", i)})
			response, err := invoke(invocationCtx, handle, payload)
			if err != nil {
				t.Errorf("invocation %d: %v", i, err)
				return
			}
			if err := json.Unmarshal([]byte(response), &responses[i]); err != nil {
				t.Errorf("invocation %d: response %s: %v", i, response, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Each response: exactly the records of its own invocation that failed.
	wantVisibility := map[string]int32{}
	wantSent := []string{}
	for i, response := range responses {
		var got, want []string
		for _, failure := range response.BatchItemFailures {
			got = append(got, failure.ItemIdentifier)
		}
		for j := 1; j <= 3; j++ {
			if i&(1<<(j-1)) != 0 {
				id := fmt.Sprintf("inv%d-m%d", i, j)
				want = append(want, id)
				wantVisibility["rh-"+id] = 2 // the first retry of noJitter's backoff
			}
		}
		if i%2 == 0 {
			wantSent = append(wantSent, fmt.Sprintf("inv%d-m4", i))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("invocation %d reported failures %v; want %v", i, got, want)
		}
	}

	// Side effects: once per job that succeeds, none for the failing ones; "shared" was
	// handled once for its two deliveries.
	wantEffects := map[string]int{"shared": 1}
	for i := range managedInvocations {
		wantEffects[fmt.Sprintf("%d-r0", i)] = 1
		for j := 1; j <= 3; j++ {
			if i&(1<<(j-1)) == 0 {
				wantEffects[fmt.Sprintf("%d-r%d", i, j)] = 1
			}
		}
		if i%2 == 1 {
			wantEffects[fmt.Sprintf("%d-r4", i)] = 1
		}
		if i >= 2 {
			wantEffects[fmt.Sprintf("%d-r5", i)] = 1
		}
	}
	mu.Lock()
	if !maps.Equal(effects, wantEffects) {
		t.Errorf("effects %v;\nwant %v", effects, wantEffects)
	}
	if calls["shared"] != 1 {
		t.Errorf("the shared job ran %d times for its two deliveries; want 1", calls["shared"])
	}
	mu.Unlock()

	// SQS calls: one visibility change per failing record, one dead-letter send per
	// permanent failure.
	if got := fake.visibilityByReceipt(); !maps.Equal(got, wantVisibility) {
		t.Errorf("visibility changes %v; want %v", got, wantVisibility)
	}
	fake.mu.Lock()
	var sent []string
	for _, input := range fake.sent {
		sent = append(sent, aws.ToString(input.MessageAttributes[sqsworker.AttributeFailureSourceQueue].StringValue)+" "+
			aws.ToString(input.MessageBody))
	}
	loaded := slices.Sorted(slices.Values(fake.getAttributes))
	changes := 0
	for _, input := range fake.visibility {
		changes += len(input.Entries)
	}
	fake.mu.Unlock()
	if len(sent) != len(wantSent) || changes != len(wantVisibility) {
		t.Errorf("%d dead-letter sends and %d visibility entries; want %d and %d", len(sent), changes, len(wantSent), len(wantVisibility))
	}
	// Every invocation has a failed record (a retry tells its last attempt by the redrive
	// policy, a permanent failure needs the dead-letter queue): each queue is read once.
	var wantLoaded []string
	for i := range managedInvocations {
		wantLoaded = append(wantLoaded, fmt.Sprintf("%s-%d", queueURL, i))
	}
	if !slices.Equal(loaded, wantLoaded) {
		t.Errorf("GetQueueAttributes for %v; want once for each queue with a failure, %v", loaded, wantLoaded)
	}
	for _, id := range wantSent {
		var i int
		fmt.Sscanf(id, "inv%d-m4", &i)
		want := fmt.Sprintf(`arn:aws:sqs:us-east-2:123456789012:orders-%d {"key":"%d-r4","gate":false,"fail":false,"permanent":true}`, i, i)
		if !slices.Contains(sent, want) {
			t.Errorf("no dead-letter send of %s (%q) in %q", id, want, sent)
		}
	}

	// One EMF line per invocation, counting only that invocation's records.
	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	if len(lines) != managedInvocations {
		t.Fatalf("%d EMF lines; want %d:\n%s", len(lines), managedInvocations, metrics.String())
	}
	seen := map[string]bool{}
	for _, line := range lines {
		var values map[string]any
		if err := json.Unmarshal([]byte(line), &values); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		queue, _ := values[emf.DimensionQueue].(string)
		var i int
		if _, err := fmt.Sscanf(queue, "orders-%d", &i); err != nil || seen[queue] {
			t.Errorf("EMF line for queue %q (duplicate: %t): %s", queue, seen[queue], line)
			continue
		}
		seen[queue] = true
		permanent := 1 - i%2
		want := map[string]float64{
			"Received":           6,
			"Succeeded":          float64(6 - bits.OnesCount(uint(i))),
			"Failed":             float64(bits.OnesCount(uint(i)) + permanent),
			"Deferred":           0,
			"DeadLettered":       float64(permanent),
			"DeadLetterFailures": 0,
			"Released":           0,
			"Abandoned":          0,
		}
		for name, value := range want {
			if values[name] != value {
				t.Errorf("invocation %d: EMF %s = %v; want %v", i, name, values[name], value)
			}
		}
	}

	// The handler's counters add up every invocation.
	stats := batch.Stats()
	if stats.Received != 48 || stats.Deleted != 36 || stats.Failed != 16 || stats.DeadLettered != 4 || stats.InFlight != 0 {
		t.Errorf("stats %+v; want 48 received, 36 deleted, 16 failed, 4 dead-lettered, none in flight", stats)
	}

	// Every "handler failed" line carries the request id of the invocation of its record.
	failedLines := 0
	for line := range strings.Lines(logs.String()) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry["msg"] != "lambda: handler failed" {
			continue
		}
		failedLines++
		var i, j int
		id, _ := entry["message_id"].(string)
		if _, err := fmt.Sscanf(id, "inv%d-m%d", &i, &j); err != nil || entry["aws_request_id"] != fmt.Sprintf("req-%d", i) {
			t.Errorf("log line for %q has aws_request_id %v; want req-%d", id, entry["aws_request_id"], i)
		}
	}
	if failedLines != 16 {
		t.Errorf("%d 'handler failed' lines; want 16", failedLines)
	}
}

// TestConcurrentInvocationsOneAbandoned: of 8 concurrent invocations of one BatchHandler,
// invocation 0 has a 1 s deadline and a handler that ignores its context; it is abandoned
// at its own deadline while the other 7, whose handlers run at the same time, finish
// normally. Only invocation 0 reports its record failed and counts an abandoned handler
// in its EMF line; the handler's later return touches nothing. Run with -race.
func TestConcurrentInvocationsOneAbandoned(t *testing.T) {
	t.Parallel()
	fake := &recordingSQS{}
	var metrics bytes.Buffer
	recorder := emf.New(emf.Config{Writer: &syncWriter{w: &metrics}})
	stuckStarted, releaseStuck, stuckReturned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	handler := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		if strings.HasPrefix(m.ID, "inv0-") {
			close(stuckStarted)
			<-releaseStuck // ignores ctx
			close(stuckReturned)
			return nil
		}
		select { // runs while invocation 0's handler is stuck
		case <-stuckStarted:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	batch := newBatch(t, handler, lambda.WithSQSClient(fake), lambda.WithDeadlineMargin(200*time.Millisecond),
		lambda.WithObserver(recorder), lambda.WithLogger(slog.New(slog.DiscardHandler)), noJitter)
	handle := recorder.Wrap(batch.Handle)
	t.Cleanup(func() {
		close(releaseStuck)
		<-stuckReturned
	})

	responses := make([]events.SQSEventResponse, managedInvocations)
	var wg sync.WaitGroup
	for i := range managedInvocations {
		wg.Go(func() {
			event := managedEvent(i)
			event.Records = event.Records[:1] // one record per invocation
			timeout := time.Minute
			if i == 0 {
				timeout = time.Second
			}
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			response, err := handle(ctx, event)
			if err != nil {
				t.Errorf("invocation %d: %v", i, err)
			}
			responses[i] = response
		})
	}
	wg.Wait()
	for i, response := range responses {
		var got []string
		for _, failure := range response.BatchItemFailures {
			got = append(got, failure.ItemIdentifier)
		}
		var want []string
		if i == 0 {
			want = []string{"inv0-m0"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("invocation %d reported failures %v; want %v", i, got, want)
		}
	}
	if got := fake.visibilityByReceipt(); !maps.Equal(got, map[string]int32{"rh-inv0-m0": 0}) {
		t.Errorf("visibility changes %v; want only the abandoned record's, to 0", got)
	}
	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	if len(lines) != managedInvocations {
		t.Fatalf("%d EMF lines; want %d", len(lines), managedInvocations)
	}
	for _, line := range lines {
		var values map[string]any
		if err := json.Unmarshal([]byte(line), &values); err != nil {
			t.Fatal(err)
		}
		abandoned, succeeded := 0.0, 1.0
		if values[emf.DimensionQueue] == "orders-0" {
			abandoned, succeeded = 1, 0
		}
		if values["Abandoned"] != abandoned || values["Succeeded"] != succeeded || values["Received"] != 1.0 {
			t.Errorf("EMF line %s: want Abandoned %v, Succeeded %v, Received 1", line, abandoned, succeeded)
		}
	}
	if stats := batch.Stats(); stats.Abandoned != 1 || stats.Deleted != 7 || stats.Released != 1 {
		t.Errorf("stats %+v; want 1 abandoned (and released), 7 deleted", stats)
	}
}
