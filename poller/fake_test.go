package poller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

const (
	fakeQueueURL = "https://sqs.us-east-1.amazonaws.com/000000000000/q"
	fakeQueueARN = "arn:aws:sqs:us-east-1:000000000000:q"
	fakeDLQURL   = "https://sqs.us-east-1.amazonaws.com/000000000000/q-dlq"
	fakeDLQARN   = "arn:aws:sqs:us-east-1:000000000000:q-dlq"
)

// fakeAPI is a recording fake of API for unit tests. ReceiveMessage hands out the
// scripted batches in order, then answers empty after a short wait (a quick long poll).
// The on* hooks decide the other calls' results; nil hooks succeed.
type fakeAPI struct {
	mu         sync.Mutex
	attributes map[string]string
	batches    [][]types.Message

	receives         []*sqs.ReceiveMessageInput
	deletes          []*sqs.DeleteMessageBatchInput
	visibilities     []*sqs.ChangeMessageVisibilityInput
	visibilityBatchs []*sqs.ChangeMessageVisibilityBatchInput
	sends            []*sqs.SendMessageInput

	onDelete          func(call int, input *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error)
	onVisibility      func(input *sqs.ChangeMessageVisibilityInput) error
	onVisibilityBatch func(input *sqs.ChangeMessageVisibilityBatchInput) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	onSend            func(input *sqs.SendMessageInput) error
}

// newFakeAPI returns a fake standard queue with a 30 s visibility timeout and a redrive
// policy (maxReceiveCount 3) to fakeDLQURL, which returns batches from ReceiveMessage.
func newFakeAPI(batches ...[]types.Message) *fakeAPI {
	return &fakeAPI{
		attributes: map[string]string{
			"QueueArn":          fakeQueueARN,
			"VisibilityTimeout": "30",
			"RedrivePolicy":     redrivePolicy(3),
		},
		batches: batches,
	}
}

// redrivePolicy is the fake queue's RedrivePolicy attribute with maxReceiveCount.
func redrivePolicy(maxReceiveCount int) string {
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": fakeDLQARN, "maxReceiveCount": maxReceiveCount})
	return string(policy)
}

func (f *fakeAPI) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.receives = append(f.receives, input)
	if len(f.batches) > 0 {
		batch := f.batches[0]
		if len(batch) > int(input.MaxNumberOfMessages) {
			f.batches[0] = batch[input.MaxNumberOfMessages:]
			batch = batch[:input.MaxNumberOfMessages]
		} else {
			f.batches = f.batches[1:]
		}
		f.mu.Unlock()
		return &sqs.ReceiveMessageOutput{Messages: batch}, nil
	}
	f.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return &sqs.ReceiveMessageOutput{}, nil
	}
}

func (f *fakeAPI) DeleteMessageBatch(_ context.Context, input *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	f.deletes = append(f.deletes, input)
	call, hook := len(f.deletes), f.onDelete
	f.mu.Unlock()
	if hook != nil {
		return hook(call, input)
	}
	return deleteAll(input), nil
}

// deleteAll is the response of a DeleteMessageBatch where every entry succeeded.
func deleteAll(input *sqs.DeleteMessageBatchInput) *sqs.DeleteMessageBatchOutput {
	output := &sqs.DeleteMessageBatchOutput{}
	for _, entry := range input.Entries {
		output.Successful = append(output.Successful, types.DeleteMessageBatchResultEntry{Id: entry.Id})
	}
	return output
}

func (f *fakeAPI) ChangeMessageVisibility(_ context.Context, input *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	f.visibilities = append(f.visibilities, input)
	hook := f.onVisibility
	f.mu.Unlock()
	if hook != nil {
		if err := hook(input); err != nil {
			return nil, err
		}
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeAPI) ChangeMessageVisibilityBatch(_ context.Context, input *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	f.visibilityBatchs = append(f.visibilityBatchs, input)
	hook := f.onVisibilityBatch
	f.mu.Unlock()
	if hook != nil {
		return hook(input)
	}
	output := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, entry := range input.Entries {
		output.Successful = append(output.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: entry.Id})
	}
	return output, nil
}

func (f *fakeAPI) SendMessage(_ context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	f.sends = append(f.sends, input)
	hook := f.onSend
	f.mu.Unlock()
	if hook != nil {
		if err := hook(input); err != nil {
			return nil, err
		}
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("dlq-id")}, nil
}

func (f *fakeAPI) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: f.attributes}, nil
}

func (f *fakeAPI) GetQueueUrl(_ context.Context, input *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if aws.ToString(input.QueueName) != "q-dlq" && aws.ToString(input.QueueName) != "q-dlq.fifo" {
		return nil, fmt.Errorf("fake: no queue %s", aws.ToString(input.QueueName))
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(fakeDLQURL)}, nil
}

func (f *fakeAPI) receiveCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.receives)
}

// recorded returns copies of the recorded calls.
func (f *fakeAPI) recorded() (deletes []*sqs.DeleteMessageBatchInput, visibilities []*sqs.ChangeMessageVisibilityInput, batches []*sqs.ChangeMessageVisibilityBatchInput, sends []*sqs.SendMessageInput) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sqs.DeleteMessageBatchInput(nil), f.deletes...),
		append([]*sqs.ChangeMessageVisibilityInput(nil), f.visibilities...),
		append([]*sqs.ChangeMessageVisibilityBatchInput(nil), f.visibilityBatchs...),
		append([]*sqs.SendMessageInput(nil), f.sends...)
}

// fakeMessage is an SDK message as SQS returns it: id m, receipt "rh-m", body "body-m".
func fakeMessage(id string, receiveCount int) types.Message {
	now := time.Now()
	return types.Message{
		MessageId:     aws.String(id),
		ReceiptHandle: aws.String("rh-" + id),
		Body:          aws.String("body-" + id),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(receiveCount),
			"SentTimestamp":                    strconv.FormatInt(now.Add(-time.Minute).UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(now.UnixMilli(), 10),
		},
	}
}

// logRecorder is a slog.Handler that keeps every record, for assertions on logs.
type logRecorder struct {
	mu      sync.Mutex
	records []loggedRecord
	attrs   []slog.Attr
	shared  *logRecorder
}

type loggedRecord struct {
	level   slog.Level
	message string
	attrs   map[string]string
}

func newLogRecorder() *logRecorder {
	recorder := &logRecorder{}
	recorder.shared = recorder
	return recorder
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, record slog.Record) error {
	attrs := make(map[string]string)
	for _, attr := range r.attrs {
		attrs[attr.Key] = attr.Value.String()
	}
	record.Attrs(func(attr slog.Attr) bool {
		attrs[attr.Key] = attr.Value.String()
		return true
	})
	r.shared.mu.Lock()
	r.shared.records = append(r.shared.records, loggedRecord{level: record.Level, message: record.Message, attrs: attrs})
	r.shared.mu.Unlock()
	return nil
}

func (r *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{attrs: append(append([]slog.Attr(nil), r.attrs...), attrs...), shared: r.shared}
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// all returns every record so far.
func (r *logRecorder) all() []loggedRecord {
	r.shared.mu.Lock()
	defer r.shared.mu.Unlock()
	return append([]loggedRecord(nil), r.shared.records...)
}

// find returns the records with this message at this level.
func (r *logRecorder) find(level slog.Level, message string) []loggedRecord {
	r.shared.mu.Lock()
	defer r.shared.mu.Unlock()
	var found []loggedRecord
	for _, record := range r.shared.records {
		if record.level == level && record.message == message {
			found = append(found, record)
		}
	}
	return found
}

// startServer starts a server for the test and shuts it down when the test ends.
func startServer(t *testing.T, api API, config Config, handler sqsworker.Handler) *Server {
	t.Helper()
	server := newServer(t, api, config, handler)
	start(t, server)
	return server
}

// newServer builds a server on the fake queue without starting it, for tests whose fake
// needs the server (for example in a hook) before its first receive.
func newServer(t *testing.T, api API, config Config, handler sqsworker.Handler) *Server {
	t.Helper()
	if config.QueueURL == "" && len(config.Queues) == 0 {
		config.QueueURL = fakeQueueURL
	}
	server, err := New(api, config, handler)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return server
}

// start starts server and shuts it down when the test ends.
func start(t *testing.T, server *Server) {
	t.Helper()
	if err := server.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		// Short: an idle worker's shutdown otherwise waits for its long poll (up to 20 s).
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// Tests about unconfirmed deletes assert ErrDeletesNotConfirmed themselves.
		if err := server.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrDeletesNotConfirmed) {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// eventually is testenv.Eventually with the default timeout of these unit tests.
func eventually(t *testing.T, message string, condition func() bool) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, message, condition)
}
