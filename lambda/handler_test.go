package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/stretchr/testify/assert"
)

// Message ids and receipt handles of testdata/sqs_event.json (m1, m2 with
// ApproximateReceiveCount 2, m3) and testdata/poison_event.json.
const (
	m1 = "059f36b4-87a3-44ab-83d2-661975830a7d"
	m2 = "2e1424d4-f796-459a-8184-9c92662be6da"
	m3 = "9a3a5c4e-6c6f-4f62-a5ec-61ec8bcd8bd1"

	poison1 = "m1-c80e8021-a70a-42c7-a470-796e1186f750"
	poison2 = "m2-c80e8021-a70a-42c7-a470-796e1186f751"
	poison3 = "m3-c80e8021-a70a-42c7-a470-796e1186f752"

	queueURL = "https://sqs.us-east-2.amazonaws.com/123456789012/orders"
)

// fixture reads testdata/name and returns it as JSON with every record's
// ApproximateFirstReceiveTimestamp moved to one second ago: the 12-hour visibility limit
// counts from the first receive, and the fixtures' 2018 timestamps would clamp every
// backoff delay to zero.
func fixture(t testing.TB, name string) (payload []byte, event events.SQSEvent) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &event); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	firstReceive := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for i := range event.Records {
		event.Records[i].Attributes["ApproximateFirstReceiveTimestamp"] = firstReceive
	}
	payload, err = json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	return payload, event
}

// receipt returns the receipt handle of the record with the given message id.
func receipt(t testing.TB, event events.SQSEvent, id string) string {
	t.Helper()
	for _, record := range event.Records {
		if record.MessageId == id {
			return record.ReceiptHandle
		}
	}
	t.Fatalf("no record %s", id)
	return ""
}

// invoke runs the batch handler through aws-lambda-go's own handler wrapper, so the
// response is serialised exactly as the Lambda runtime sends it.
func invoke(ctx context.Context, handler any, payload []byte) (string, error) {
	response, err := awslambda.NewHandler(handler).Invoke(ctx, payload)
	return string(response), err
}

// job is the body the test handlers read; decoding panics on a body that is not JSON,
// the way a handler's decoding helper might.
type job struct {
	Order  string `json:"order"`
	Key    string `json:"key"`
	Poison bool   `json:"poison"`
	Fail   bool   `json:"fail"`
}

func decodeJob(body string) job {
	var decoded job
	if err := json.Unmarshal([]byte(body), &decoded); err != nil {
		panic(fmt.Sprintf("decoding job: %v", err))
	}
	return decoded
}

// poisonFails returns a handler that fails every poison job with err.
func poisonFails(err error) sqsworker.HandlerFunc {
	return func(_ context.Context, m *sqsworker.Message) error {
		if decodeJob(m.Body).Poison {
			return err
		}
		return nil
	}
}

var noJitter = lambda.WithBackoff(sqsworker.Backoff{Base: 2 * time.Second, Cap: time.Minute, Jitter: sqsworker.JitterNone})

func TestBatchHandlerResponses(t *testing.T) {
	t.Parallel()
	failAll := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return errors.New("downstream 503") })
	tests := []struct {
		name    string
		handler sqsworker.Handler
		options []lambda.Option
		fake    *recordingSQS
		// want is the exact serialised response; ignored when wantErr is set.
		want    string
		wantErr error
		// wantVisibility maps message id to the visibility timeout set, in seconds.
		wantVisibility map[string]int32
		wantSent       int
		wantDeleted    []string
	}{
		{
			name:    "all succeed",
			handler: sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
			want:    `{"batchItemFailures":[]}`,
		},
		{
			name:           "partial failure backs off the failed record",
			handler:        poisonFails(errors.New("downstream 503")),
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4}, // receive count 2: 2 s * 2^1
		},
		{
			name:           "all fail, default lists every record",
			handler:        failAll,
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m1 + `"},{"itemIdentifier":"` + m2 + `"},{"itemIdentifier":"` + m3 + `"}]}`,
			wantVisibility: map[string]int32{m1: 2, m2: 4, m3: 2},
		},
		{
			name:           "all fail, entire batch failure error",
			handler:        failAll,
			options:        []lambda.Option{lambda.WithEntireBatchFailureError(true)},
			wantErr:        lambda.ErrEntireBatchFailed,
			wantVisibility: map[string]int32{m1: 2, m2: 4, m3: 2},
		},
		{
			name:           "entire batch failure error is not raised for a partial failure",
			handler:        poisonFails(errors.New("downstream 503")),
			options:        []lambda.Option{lambda.WithEntireBatchFailureError(true)},
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4},
		},
		{
			name: "panic fails only its record",
			handler: sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
				if decodeJob(m.Body).Poison {
					panic("poison pill")
				}
				return nil
			}),
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4},
		},
		{
			name:           "retry after sets the requested delay",
			handler:        poisonFails(sqsworker.RetryAfter(90*time.Second, errors.New("rate limited"))),
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 90},
		},
		{
			name:           "defer sets the requested delay, rounded up",
			handler:        poisonFails(sqsworker.Defer(5500*time.Millisecond, "original still running")),
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 6},
		},
		{
			name:     "permanent error goes to the dead-letter queue and counts as success",
			handler:  poisonFails(sqsworker.Permanent("PoisonPill", errors.New("order A-2 cannot be priced"))),
			want:     `{"batchItemFailures":[]}`,
			wantSent: 1,
		},
		{
			name:           "permanent error whose dead-letter send fails is retried",
			handler:        poisonFails(sqsworker.Permanent("PoisonPill", errors.New("order A-2 cannot be priced"))),
			fake:           &recordingSQS{sendErr: errors.New("AccessDenied")},
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4},
			wantSent:       1,
		},
		{
			name:           "failed visibility change still reports the record",
			handler:        poisonFails(errors.New("downstream 503")),
			fake:           &recordingSQS{visibilityErr: errors.New("ThrottlingException")},
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4},
		},
		{
			name:           "rejected visibility entry still reports the record",
			handler:        poisonFails(errors.New("downstream 503")),
			fake:           &recordingSQS{failVisibilityIDs: map[string]bool{"1": true}},
			want:           `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`,
			wantVisibility: map[string]int32{m2: 4},
		},
		{
			name:           "without ReportBatchItemFailures the function deletes successes and fails the invocation",
			handler:        poisonFails(errors.New("downstream 503")),
			options:        []lambda.Option{lambda.WithReportBatchItemFailures(false)},
			wantErr:        lambda.ErrBatchItemFailuresNotReported,
			wantVisibility: map[string]int32{m2: 4},
			wantDeleted:    []string{m1, m3},
		},
		{
			name:    "without ReportBatchItemFailures a full success is left to Lambda",
			handler: sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
			options: []lambda.Option{lambda.WithReportBatchItemFailures(false)},
			want:    `{"batchItemFailures":[]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload, event := fixture(t, "sqs_event.json")
			fake := tc.fake
			if fake == nil {
				fake = &recordingSQS{}
			}
			options := append([]lambda.Option{lambda.WithSQSClient(fake), noJitter}, tc.options...)
			got, err := invoke(context.Background(), batchFunc(t, tc.handler, options...), payload)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				if _, ok := errors.AsType[*lambda.BatchError](err); !ok {
					t.Errorf("error %T is not a *lambda.BatchError", err)
				}
			} else {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got != tc.want {
					t.Errorf("response\n got %s\nwant %s", got, tc.want)
				}
			}
			wantVisibility := map[string]int32{}
			for id, seconds := range tc.wantVisibility {
				wantVisibility[receipt(t, event, id)] = seconds
			}
			assert.Equal(t, wantVisibility, fake.visibilityByReceipt(), "visibility timeouts by receipt handle")
			if len(fake.sent) != tc.wantSent {
				t.Errorf("dead-letter sends = %d, want %d", len(fake.sent), tc.wantSent)
			}
			var deleted []string
			for _, input := range fake.deleted {
				for _, entry := range input.Entries {
					deleted = append(deleted, aws.ToString(entry.ReceiptHandle))
				}
			}
			var wantDeleted []string
			for _, id := range tc.wantDeleted {
				wantDeleted = append(wantDeleted, receipt(t, event, id))
			}
			assert.Equal(t, wantDeleted, deleted, "deleted receipt handles")
		})
	}
}

// TestExactRequests checks the exact ChangeMessageVisibilityBatch and SendMessage requests
// of a batch with one ordinary failure and one permanent failure.
func TestExactRequests(t *testing.T) {
	t.Parallel()
	payload, event := fixture(t, "sqs_event.json")
	fake := &recordingSQS{}
	handler := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		switch decodeJob(m.Body).Order {
		case "A-2":
			return errors.New("downstream 503")
		case "A-3":
			return sqsworker.Permanent("PoisonPill", errors.New("order A-3 cannot be priced"))
		}
		return nil
	})
	fn := batchFunc(t, handler, lambda.WithSQSClient(fake), noJitter)
	got, err := invoke(context.Background(), fn, payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"}]}`; got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
	wantVisibility := []*sqs.ChangeMessageVisibilityBatchInput{{
		QueueUrl: aws.String(queueURL),
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
			// One entry-id scheme for every batch call (internal/sqsx): the entry's index in its request.
			{Id: aws.String("0"), ReceiptHandle: aws.String(receipt(t, event, m2)), VisibilityTimeout: 4},
		},
	}}
	assert.Equal(t, wantVisibility, fake.visibility, "ChangeMessageVisibilityBatch requests")
	str := func(value string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
	}
	wantSent := []*sqs.SendMessageInput{{
		QueueUrl:    aws.String(testDLQURL),
		MessageBody: aws.String(`{"order":"A-3"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			sqsworker.AttributeFailureReason:       str("PoisonPill"),
			sqsworker.AttributeFailureMessageID:    str(m3),
			sqsworker.AttributeFailureError:        str("permanent failure (PoisonPill): order A-3 cannot be priced"),
			sqsworker.AttributeFailureSourceQueue:  str("arn:aws:sqs:us-east-2:123456789012:orders"),
			sqsworker.AttributeFailureReceiveCount: {DataType: aws.String("Number"), StringValue: aws.String("1")},
		},
	}}
	assert.Equal(t, wantSent, fake.sent, "SendMessage requests")

	// The redrive policy is read once per execution environment, not per invocation.
	if _, err := invoke(context.Background(), fn, payload); err != nil {
		t.Fatal(err)
	}
	if len(fake.getAttributes) != 1 || len(fake.getURL) != 1 {
		t.Errorf("GetQueueAttributes calls %v, GetQueueUrl calls %v; want one each across two invocations", fake.getAttributes, fake.getURL)
	}
	if len(fake.sent) != 2 {
		t.Errorf("dead-letter sends = %d, want 2", len(fake.sent))
	}
}

// TestPoisonBody is C02's unit lane: m1 succeeds, m2's handler returns an error, and
// decoding m3's body "not-json" panics before user code could read any id from it.
func TestPoisonBody(t *testing.T) {
	t.Parallel()
	payload, _ := fixture(t, "poison_event.json")
	handler := sqsworker.HandlerFunc(func(_ context.Context, m *sqsworker.Message) error {
		if decodeJob(m.Body).Fail {
			return errors.New("downstream 503")
		}
		return nil
	})
	got, err := invoke(context.Background(), batchFunc(t, handler, lambda.WithSQSClient(&recordingSQS{})), payload)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"batchItemFailures":[{"itemIdentifier":"` + poison2 + `"},{"itemIdentifier":"` + poison3 + `"}]}`
	if got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
}

// TestUnidentifiedFailure: a failed record without a message id cannot be reported by
// id, so the invocation fails instead of emitting an empty itemIdentifier.
func TestUnidentifiedFailure(t *testing.T) {
	t.Parallel()
	_, event := fixture(t, "sqs_event.json")
	event.Records[1].MessageId = ""
	payload, _ := json.Marshal(event)
	fn := batchFunc(t, poisonFails(errors.New("downstream 503")), lambda.WithSQSClient(&recordingSQS{}))
	got, err := invoke(context.Background(), fn, payload)
	if !errors.Is(err, lambda.ErrUnidentifiedFailure) {
		t.Fatalf("response %q, error %v; want %v", got, err, lambda.ErrUnidentifiedFailure)
	}
}

// TestEntireBatchFailureLogs is C03's logging check: with every record failing, one log
// line per record names its message id and receive count (the attempt).
func TestEntireBatchFailureLogs(t *testing.T) {
	t.Parallel()
	for _, entireBatchError := range []bool{false, true} {
		t.Run(fmt.Sprintf("error=%t", entireBatchError), func(t *testing.T) {
			t.Parallel()
			payload, _ := fixture(t, "sqs_event.json")
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))
			fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				return errors.New("downstream 503")
			}), lambda.WithSQSClient(&recordingSQS{}), lambda.WithLogger(logger), lambda.WithEntireBatchFailureError(entireBatchError))
			_, _ = invoke(context.Background(), fn, payload)
			found := map[string]float64{}
			for line := range strings.Lines(logs.String()) {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if entry["msg"] == "lambda: handler failed" {
					found[entry["message_id"].(string)] = entry["receive_count"].(float64)
				}
			}
			assert.Equal(t, map[string]float64{m1: 1, m2: 2, m3: 1}, found, "per-record failure logs, message id → receive count")
		})
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestDeadline is C07's unit lane: with the deadline exactly now, or 500 ms past, no
// record starts; all are reported failed and made visible again at once.
func TestDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deadline time.Duration
	}{
		{name: "deadline now", deadline: 0},
		{name: "deadline 500ms past", deadline: -500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload, event := fixture(t, "sqs_event.json")
			fake := &recordingSQS{}
			var started atomic.Int32
			fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
				started.Add(1)
				return nil
			}), lambda.WithSQSClient(fake), lambda.WithDeadlineMargin(0))
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(tc.deadline))
			defer cancel()
			got, err := invoke(ctx, fn, payload)
			if err != nil {
				t.Fatal(err)
			}
			if n := started.Load(); n != 0 {
				t.Errorf("%d records started, want 0", n)
			}
			want := `{"batchItemFailures":[{"itemIdentifier":"` + m1 + `"},{"itemIdentifier":"` + m2 + `"},{"itemIdentifier":"` + m3 + `"}]}`
			if got != want {
				t.Errorf("response\n got %s\nwant %s", got, want)
			}
			wantVisibility := map[string]int32{receipt(t, event, m1): 0, receipt(t, event, m2): 0, receipt(t, event, m3): 0}
			assert.Equal(t, wantVisibility, fake.visibilityByReceipt(), "visibility timeouts")
		})
	}
}

// TestDeadlineMargin: records start only while the margin is left, and handlers'
// contexts end margin before the invocation's deadline (CASES.md N01: the rest of the
// margin is for abandoning a handler that ignores it, the visibility changes and the
// response).
func TestDeadlineMargin(t *testing.T) {
	t.Parallel()
	payload, _ := fixture(t, "sqs_event.json")
	deadline := time.Now().Add(2500 * time.Millisecond)
	var handled []string
	var handlerDeadline time.Time
	fn := batchFunc(t, sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		handled = append(handled, m.ID)
		handlerDeadline, _ = ctx.Deadline()
		time.Sleep(700 * time.Millisecond) // after this, less than the 2 s margin is left
		return nil
	}), lambda.WithSQSClient(&recordingSQS{}), lambda.WithConcurrency(1), lambda.WithDeadlineMargin(2*time.Second))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	got, err := invoke(ctx, fn, payload)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(handled, []string{m1}) {
		t.Errorf("handled %v, want only %s", handled, m1)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":"` + m2 + `"},{"itemIdentifier":"` + m3 + `"}]}`; got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
	if want := deadline.Add(-2 * time.Second); !handlerDeadline.Equal(want) {
		t.Errorf("handler deadline %v, want the invocation's deadline minus the margin (%v)", handlerDeadline, want)
	}
}

// TestConcurrencyLimit: records of a standard queue run concurrently, never more than the limit.
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	_, event := fixture(t, "sqs_event.json")
	template := event.Records[0]
	event.Records = nil
	for i := range 12 {
		record := template
		record.MessageId = fmt.Sprintf("m%02d", i)
		record.ReceiptHandle = fmt.Sprintf("r%02d", i)
		event.Records = append(event.Records, record)
	}
	payload, _ := json.Marshal(event)
	var running, peak atomic.Int32
	fake := &recordingSQS{}
	fn := batchFunc(t, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		now := running.Add(1)
		for {
			old := peak.Load()
			if now <= old || peak.CompareAndSwap(old, now) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		running.Add(-1)
		return errors.New("downstream 503")
	}), lambda.WithSQSClient(fake), lambda.WithConcurrency(3))
	if _, err := invoke(context.Background(), fn, payload); err != nil {
		t.Fatal(err)
	}
	if got := peak.Load(); got != 3 {
		t.Errorf("peak concurrency %d, want 3", got)
	}
	// Twelve failures: visibility changes go out in batches of at most ten.
	var sizes []int
	for _, input := range fake.visibility {
		sizes = append(sizes, len(input.Entries))
	}
	if !slices.Equal(sizes, []int{10, 2}) {
		t.Errorf("ChangeMessageVisibilityBatch entry counts %v, want [10 2]", sizes)
	}
}

// TestNewBatchHandlerRefusesBadOptions: a bad option or a nil handler is an error from
// NewBatchHandler (no panic), every problem on a line of its own, prefixed "lambda: ".
func TestNewBatchHandlerRefusesBadOptions(t *testing.T) {
	t.Parallel()
	handler := sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil })
	tests := []struct {
		name    string
		handler sqsworker.Handler
		options []lambda.Option
		want    []string
	}{
		{name: "nil handler", want: []string{"lambda: the handler is nil"}},
		{name: "zero concurrency", handler: handler, options: []lambda.Option{lambda.WithConcurrency(0)}, want: []string{"lambda: Concurrency 0 is below 1"}},
		{name: "negative margin", handler: handler, options: []lambda.Option{lambda.WithDeadlineMargin(-time.Second)}, want: []string{"lambda: DeadlineMargin -1s is negative"}},
		{name: "unknown FIFO mode", handler: handler, options: []lambda.Option{lambda.WithFIFOMode(lambda.FIFOMode(7))}, want: []string{"lambda: FIFOMode 7 is not a known FIFO mode"}},
		{name: "negative fault threshold", handler: handler, options: []lambda.Option{lambda.WithInfrastructureFaultThreshold(-1)}, want: []string{"lambda: InfrastructureFaultThreshold -1 is negative"}},
		{name: "every problem at once", options: []lambda.Option{lambda.WithConcurrency(-2), lambda.WithBackoff(sqsworker.Backoff{Cap: -time.Second})},
			want: []string{"lambda: the handler is nil", "lambda: Concurrency -2 is below 1", "lambda: Backoff.Cap -1s is negative"}},
		{name: "a later option wins", handler: handler, options: []lambda.Option{lambda.WithConcurrency(0), lambda.WithConcurrency(3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			batch, err := lambda.NewBatchHandler(tc.handler, tc.options...)
			if len(tc.want) == 0 {
				if err != nil || batch == nil {
					t.Fatalf("NewBatchHandler: %v, want a handler", err)
				}
				return
			}
			if batch != nil || err == nil {
				t.Fatalf("NewBatchHandler returned %v, %v; want no handler and an error", batch, err)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("error lines %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkBatchHandler measures the adapter's own overhead on a batch of ten no-op records.
func BenchmarkBatchHandler(b *testing.B) {
	_, event := fixture(b, "sqs_event.json")
	template := event.Records[0]
	event.Records = nil
	for i := range 10 {
		record := template
		record.MessageId = fmt.Sprintf("m%02d", i)
		event.Records = append(event.Records, record)
	}
	fn := batchFunc(b, sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error { return nil }),
		lambda.WithSQSClient(&recordingSQS{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		response, err := fn(ctx, event)
		if err != nil || len(response.BatchItemFailures) != 0 {
			b.Fatal(response, err)
		}
	}
}
