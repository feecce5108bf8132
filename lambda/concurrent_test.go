package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
)

// heldAttributesSQS is a recordingSQS whose GetQueueAttributes waits until release is
// closed; entered is closed when the first call arrives.
type heldAttributesSQS struct {
	*recordingSQS
	entered, release chan struct{}
	once             sync.Once
}

func (f *heldAttributesSQS) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.once.Do(func() { close(f.entered) })
	<-f.release
	return f.recordingSQS.GetQueueAttributes(ctx, input, opts...)
}

// oneRecord returns an event with one record of sqs_event.json, given a new message id.
func oneRecord(t *testing.T, id string) events.SQSEvent {
	t.Helper()
	_, event := fixture(t, "sqs_event.json")
	record := event.Records[0]
	record.MessageId = id
	record.ReceiptHandle = "rh-" + id
	return events.SQSEvent{Records: []events.SQSMessage{record}}
}

// TestQueueLoadNeverHoldsALockAcrossTheCall: invocation A's dead-letter send loads the
// queue's attributes and the call hangs; invocation B (running in the same process, as
// on Lambda Managed Instances) needs the same queue. B must give up at its own deadline
// while A's call is still held, not wait for A's call; A's record is then dead-lettered
// once the call returns, with one GetQueueAttributes for both.
func TestQueueLoadNeverHoldsALockAcrossTheCall(t *testing.T) {
	t.Parallel()
	fake := &heldAttributesSQS{recordingSQS: &recordingSQS{}, entered: make(chan struct{}), release: make(chan struct{})}
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return sqsworker.Permanent("Poison", errors.New("bad order"))
	}), lambda.WithSQSClient(fake), lambda.WithDeadlineMargin(0), lambda.WithLogger(slog.New(slog.DiscardHandler)))

	type result struct {
		response events.SQSEventResponse
		err      error
	}
	aDone := make(chan result, 1)
	go func() {
		response, err := fn(t.Context(), oneRecord(t, "a"))
		aDone <- result{response, err}
	}()
	<-fake.entered // A is inside GetQueueAttributes

	bCtx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	bDone := make(chan result, 1)
	go func() {
		response, err := fn(bCtx, oneRecord(t, "b"))
		bDone <- result{response, err}
	}()
	var b result
	select {
	case b = <-bDone:
	case <-time.After(10 * time.Second): // far past B's 200 ms deadline: B waited for A's call
		close(fake.release)
		b = <-bDone
		t.Errorf("invocation B returned only after A's GetQueueAttributes was released, not at its own deadline")
	}
	select {
	case <-fake.release:
	default:
		close(fake.release)
	}
	if b.err != nil || len(b.response.BatchItemFailures) != 1 || b.response.BatchItemFailures[0].ItemIdentifier != "b" {
		t.Errorf("invocation B = %+v, %v; want record b reported failed (its dead-letter send could not start in time)", b.response, b.err)
	}
	a := <-aDone
	if a.err != nil || len(a.response.BatchItemFailures) != 0 {
		t.Errorf("invocation A = %+v, %v; want success (dead-lettered)", a.response, a.err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.getAttributes) != 1 || len(fake.sent) != 1 {
		t.Errorf("GetQueueAttributes calls = %d, dead-letter sends = %d; want 1 and 1 (A's)", len(fake.getAttributes), len(fake.sent))
	}
}

// TestQueueLoadCachedAfterSuccess: the second invocation reuses the loaded queue.
func TestQueueLoadCachedAfterSuccess(t *testing.T) {
	t.Parallel()
	fake := &heldAttributesSQS{recordingSQS: &recordingSQS{}, entered: make(chan struct{}), release: make(chan struct{})}
	close(fake.release)
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return sqsworker.Permanent("Poison", errors.New("bad order"))
	}), lambda.WithSQSClient(fake), lambda.WithDeadlineMargin(0), lambda.WithLogger(slog.New(slog.DiscardHandler)))
	event := oneRecord(t, "a")
	event.Records[0].EventSourceARN = "arn:aws:sqs:us-east-2:123456789012:orders"
	for i := range 2 {
		if response, err := fn(t.Context(), event); err != nil || len(response.BatchItemFailures) != 0 {
			t.Fatalf("invocation %d = %+v, %v; want success", i, response, err)
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.getAttributes) != 1 {
		t.Errorf("GetQueueAttributes calls = %d; want 1 (cached after success)", len(fake.getAttributes))
	}
}

// TestSeededBackoffRandomUnderConcurrency: a seeded *rand.Rand's Float64 as
// Backoff.Random, ten records failing at once. Run with -race: the adapter must
// serialise the calls (it raced before).
func TestSeededBackoffRandomUnderConcurrency(t *testing.T) {
	t.Parallel()
	_, base := fixture(t, "sqs_event.json")
	var event events.SQSEvent
	for i := range 10 {
		record := base.Records[0]
		record.MessageId, record.ReceiptHandle = fmt.Sprintf("m%d", i), fmt.Sprintf("rh%d", i)
		event.Records = append(event.Records, record)
	}
	seeded := rand.New(rand.NewPCG(1, 2))
	fake := &recordingSQS{}
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return errors.New("downstream 503")
	}), lambda.WithSQSClient(fake), lambda.WithConcurrency(10), lambda.WithLogger(slog.New(slog.DiscardHandler)),
		lambda.WithBackoff(sqsworker.Backoff{Random: seeded.Float64}))
	response, err := fn(t.Context(), event)
	if err != nil || len(response.BatchItemFailures) != 10 {
		t.Fatalf("response %+v, %v; want 10 failures", response, err)
	}
	if got := len(fake.visibilityByReceipt()); got != 10 {
		t.Errorf("visibility changes for %d records; want 10", got)
	}
}

// TestInvocationLogsCarryTheRequestID: the "failing the whole invocation" line and the
// failed SQS call's line carry the Lambda request id, like the per-record lines.
func TestInvocationLogsCarryTheRequestID(t *testing.T) {
	t.Parallel()
	_, event := fixture(t, "sqs_event.json")
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
	fake := &recordingSQS{visibilityErr: errors.New("connection reset")}
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		return errors.New("downstream 503")
	}), lambda.WithSQSClient(fake), lambda.WithLogger(logger), lambda.WithEntireBatchFailureError(true))
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "req-7"})
	if _, err := fn(ctx, event); !errors.Is(err, lambda.ErrEntireBatchFailed) {
		t.Fatalf("error %v; want ErrEntireBatchFailed", err)
	}
	want := map[string]bool{"lambda: failing the whole invocation": false, "lambda: ChangeMessageVisibilityBatch failed": false}
	for line := range strings.Lines(logs.String()) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := entry["msg"].(string)
		if _, ok := want[msg]; !ok {
			continue
		}
		want[msg] = true
		if entry["aws_request_id"] != "req-7" {
			t.Errorf("log line %q has aws_request_id %v; want req-7", msg, entry["aws_request_id"])
		}
	}
	for msg, seen := range want {
		if !seen {
			t.Errorf("no log line %q in:\n%s", msg, logs.String())
		}
	}
}
