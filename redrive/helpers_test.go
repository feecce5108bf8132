package redrive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// body returns a JSON body carrying id, padded with pad bytes of filler.
func body(id string, pad int) string {
	text, _ := json.Marshal(map[string]string{"id": id, "pad": fmtPad(pad)})
	return string(text)
}

func fmtPad(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}

// idOf returns the "id" field of a body made by body (or any JSON object with "id").
func idOf(t testing.TB, text string) string {
	t.Helper()
	var fields struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		t.Fatalf("body %.40q is not JSON: %v", text, err)
	}
	return fields.ID
}

// sendAll sends bodies to url, ten at a time, with attributes on every message.
func sendAll(t testing.TB, client *sqs.Client, url string, bodies []string, attributes map[string]types.MessageAttributeValue) {
	t.Helper()
	for start := 0; start < len(bodies); start += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i, text := range bodies[start:min(start+10, len(bodies))] {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String(text), MessageAttributes: attributes,
			})
		}
		output, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			t.Fatalf("sending to %s: %v", url, err)
		}
		if len(output.Failed) > 0 {
			t.Fatalf("sending to %s: %d entries failed: %s", url, len(output.Failed), aws.ToString(output.Failed[0].Message))
		}
	}
}

// sendOne sends one message with SendMessage.
func sendOne(t testing.TB, client *sqs.Client, input *sqs.SendMessageInput) {
	t.Helper()
	if _, err := client.SendMessage(context.Background(), input); err != nil {
		t.Fatalf("sending to %s: %v", aws.ToString(input.QueueUrl), err)
	}
}

// deadLetterThroughReceives sends n messages (ids prefix0..) to queue and receives them
// with visibility 0 until the queue's redrive policy (maxReceiveCount 1) has moved all
// of them to the dead-letter queue, the way production messages get there.
func deadLetterThroughReceives(t testing.TB, client *sqs.Client, queue testenv.Queue, prefix string, n int) []string {
	t.Helper()
	var bodies []string
	for i := range n {
		bodies = append(bodies, body(prefix+strconv.Itoa(i), 0))
	}
	sendAll(t, client, queue.URL, bodies, nil)
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d messages dead-lettered", n), func() bool {
		// ReceiveMessage cannot ask for visibility 0 (the SDK leaves a zero out), so each
		// receive is failed at once with ChangeMessageVisibilityBatch, as a worker would.
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 10,
		})
		if err != nil {
			t.Fatalf("receiving: %v", err)
		}
		release(t, client, queue.URL, output.Messages)
		visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible+inFlight == n
	})
	return bodies
}

// release makes messages visible again at once.
func release(t testing.TB, client *sqs.Client, url string, messages []types.Message) {
	t.Helper()
	if len(messages) == 0 {
		return
	}
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for i, message := range messages {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String("e" + strconv.Itoa(i)), ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0,
		})
	}
	output, err := client.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(url), Entries: entries,
	})
	if err != nil || len(output.Failed) > 0 {
		t.Fatalf("releasing messages of %s: %v %+v", url, err, output)
	}
}

// drain receives the want messages url should hold (hiding each for a minute), failing
// the test if they do not all arrive, and returns them with any extra message.
func drain(t testing.TB, client *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	return testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), VisibilityTimeout: 60,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	}, want, testenv.ReceiveTimeout)
}

// snapshot counts url's want messages by body id, then releases them all (visibility 0).
func snapshot(t testing.TB, client *sqs.Client, url string, want int) map[string]int {
	t.Helper()
	messages := drain(t, client, url, want)
	for start := 0; start < len(messages); start += 10 {
		release(t, client, url, messages[start:min(start+10, len(messages))])
	}
	return countIDs(t, messages)
}

// countIDs counts messages by body id.
func countIDs(t testing.TB, messages []types.Message) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, message := range messages {
		counts[idOf(t, aws.ToString(message.Body))]++
	}
	return counts
}

// assertEmpty fails unless url holds no message, visible or in flight.
func assertEmpty(t testing.TB, client *sqs.Client, url string) {
	t.Helper()
	if visible, inFlight := testenv.Counts(t, client, url); visible != 0 || inFlight != 0 {
		t.Fatalf("queue %s holds %d visible and %d in-flight messages, want none", url, visible, inFlight)
	}
}

// setMaximumMessageSize sets MaximumMessageSize on the queues. The test skips on an
// emulator that ignores the attribute.
func setMaximumMessageSize(t testing.TB, client *sqs.Client, size int, urls ...string) {
	t.Helper()
	testenv.SkipOn(t, testenv.ElasticMQIgnoresSizeAndRetention)
	for _, url := range urls {
		_, err := client.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl:   aws.String(url),
			Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(size)},
		})
		if err != nil {
			t.Fatalf("setting MaximumMessageSize of %s: %v", url, err)
		}
	}
}

func stringAttribute(value string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

// event is one call the recorder saw.
type event struct {
	kind string // "confirmed" (a send SQS confirmed) or "delete"
	id   string // body id
}

// sentRequest is one SendMessageBatch request as the recorder saw it.
type sentRequest struct {
	entries int
	bytes   int
	ids     []string
	input   *sqs.SendMessageBatchInput
}

// recorder wraps the SQS client: it records SendMessageBatch requests and the order of
// confirmed sends and deletes, and can fail one entry once or crash.
type recorder struct {
	redrive.MoverAPI
	t testing.TB

	mu sync.Mutex
	// failOnce is the body id whose first send fails with a per-entry error.
	failOnce string
	failed   bool
	// crashAtDelete makes the first DeleteMessageBatch, and every call after it, fail.
	crashAtDelete bool
	crashed       bool
	receipts      map[string]string // receipt handle -> body id
	requests      []sentRequest
	events        []event
}

var errCrash = fmt.Errorf("injected crash")

func newRecorder(t testing.TB, api redrive.MoverAPI) *recorder {
	return &recorder{MoverAPI: api, t: t, receipts: map[string]string{}}
}

func (r *recorder) down() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.crashed {
		return errCrash
	}
	return nil
}

func (r *recorder) ReceiveMessage(ctx context.Context, input *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := r.down(); err != nil {
		return nil, err
	}
	output, err := r.MoverAPI.ReceiveMessage(ctx, input, optFns...)
	if err == nil {
		r.mu.Lock()
		for _, message := range output.Messages {
			r.receipts[aws.ToString(message.ReceiptHandle)] = idOf(r.t, aws.ToString(message.Body))
		}
		r.mu.Unlock()
	}
	return output, err
}

// entrySize counts an entry's bytes as SQS does, independently of sqsx.MessageSize.
func entrySize(entry types.SendMessageBatchRequestEntry) int {
	size := len(aws.ToString(entry.MessageBody))
	for name, value := range entry.MessageAttributes {
		size += len(name) + len(aws.ToString(value.DataType)) + len(aws.ToString(value.StringValue)) + len(value.BinaryValue)
	}
	return size
}

func (r *recorder) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if err := r.down(); err != nil {
		return nil, err
	}
	request := sentRequest{entries: len(input.Entries), input: input}
	forward := *input
	forward.Entries = nil
	var injected []types.BatchResultErrorEntry
	idByEntry := map[string]string{}
	r.mu.Lock()
	for _, entry := range input.Entries {
		id := idOf(r.t, aws.ToString(entry.MessageBody))
		idByEntry[aws.ToString(entry.Id)] = id
		request.bytes += entrySize(entry)
		request.ids = append(request.ids, id)
		if id == r.failOnce && !r.failed {
			r.failed = true
			injected = append(injected, types.BatchResultErrorEntry{
				Id: entry.Id, Code: aws.String("InternalError"), Message: aws.String("injected per-entry failure"), SenderFault: false,
			})
			continue
		}
		forward.Entries = append(forward.Entries, entry)
	}
	r.requests = append(r.requests, request)
	r.mu.Unlock()
	output := &sqs.SendMessageBatchOutput{}
	if len(forward.Entries) > 0 {
		var err error
		if output, err = r.MoverAPI.SendMessageBatch(ctx, &forward, optFns...); err != nil {
			return nil, err
		}
	}
	output.Failed = append(output.Failed, injected...)
	r.mu.Lock()
	for _, ok := range output.Successful {
		r.events = append(r.events, event{kind: "confirmed", id: idByEntry[aws.ToString(ok.Id)]})
	}
	r.mu.Unlock()
	return output, nil
}

func (r *recorder) DeleteMessageBatch(ctx context.Context, input *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	r.mu.Lock()
	if r.crashAtDelete {
		r.crashed = true
	}
	for _, entry := range input.Entries {
		r.events = append(r.events, event{kind: "delete", id: r.receipts[aws.ToString(entry.ReceiptHandle)]})
	}
	r.mu.Unlock()
	if err := r.down(); err != nil {
		return nil, err
	}
	return r.MoverAPI.DeleteMessageBatch(ctx, input, optFns...)
}

func (r *recorder) ChangeMessageVisibilityBatch(ctx context.Context, input *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if err := r.down(); err != nil {
		return nil, err
	}
	return r.MoverAPI.ChangeMessageVisibilityBatch(ctx, input, optFns...)
}

// assertDeletesFollowConfirmedSends fails if a message was deleted from the source
// before the destination confirmed its send.
func (r *recorder) assertDeletesFollowConfirmedSends(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	confirmed := map[string]bool{}
	for i, e := range r.events {
		switch e.kind {
		case "confirmed":
			confirmed[e.id] = true
		case "delete":
			if !confirmed[e.id] {
				t.Fatalf("event %d: message %s deleted from the source before its send was confirmed", i, e.id)
			}
		}
	}
}

// deadLetter sends message to queue's dead-letter queue the way a host does for a
// permanent failure (settle.SendToDeadLetterQueue), with the failure attributes.
func deadLetter(t testing.TB, client *sqs.Client, queueURL string, message *sqsworker.Message, reason string) {
	t.Helper()
	queue, err := sqsinfo.LoadQueue(context.Background(), client, queueURL)
	if err != nil {
		t.Fatal(err)
	}
	outcome := sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: reason, Err: fmt.Errorf("endpoint answered %s", reason)}
	if err := settle.SendToDeadLetterQueue(context.Background(), client, queue, message, outcome); err != nil {
		t.Fatal(err)
	}
}
