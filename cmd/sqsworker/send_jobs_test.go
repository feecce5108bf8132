package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// recordingSend records the batch entries `send` makes.
type recordingSend struct {
	mu      sync.Mutex
	entries []types.SendMessageBatchRequestEntry
}

func (r *recordingSend) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{MessageId: aws.String("single")}, nil
}

func (r *recordingSend) SendMessageBatch(_ context.Context, input *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	output := &sqs.SendMessageBatchOutput{}
	for _, entry := range input.Entries {
		r.entries = append(r.entries, entry)
		output.Successful = append(output.Successful, types.SendMessageBatchResultEntry{Id: entry.Id, MessageId: aws.String("m-" + aws.ToString(entry.Id))})
	}
	return output, nil
}

func (r *recordingSend) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": "1048576"}}, nil
}

// TestSendJobTypeAndLongDelay: --job-type becomes the job-type attribute (a line's "type"
// wins), and a 40-minute delay is sent as a 15-minute hop with its due time.
func TestSendJobTypeAndLongDelay(t *testing.T) {
	t.Parallel()
	messages, err := readMessages(strings.NewReader(`{"body":{"month":"2026-11"}}`+"\n"+`{"body":"x","type":"cleanup","delay_seconds":60}`), "-",
		fileMessage{Type: "report", DelaySeconds: 2400, Attributes: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	fake := &recordingSend{}
	var out bytes.Buffer
	before := time.Now()
	report, err := newApp(&out, &out).sendMessages(context.Background(), fake, &sqsinfo.Queue{URL: "http://127.0.0.1:4566/000000000000/jobs"}, messages)
	if err != nil || len(report.Sent) != 2 || len(report.Failed) != 0 {
		t.Fatalf("report %+v, %v", report, err)
	}
	first, second := fake.entries[0], fake.entries[1]
	if got := aws.ToString(first.MessageAttributes[sqsworker.AttributeJobType].StringValue); got != "report" {
		t.Errorf("first line's job type %q, want report", got)
	}
	if first.DelaySeconds != 900 {
		t.Errorf("first line's DelaySeconds %d, want a 900-second hop", first.DelaySeconds)
	}
	dueMilliseconds, _ := strconv.ParseInt(aws.ToString(first.MessageAttributes[sqsworker.AttributeDueAt].StringValue), 10, 64)
	if due := time.UnixMilli(dueMilliseconds); due.Before(before.Add(40*time.Minute-time.Second)) || due.After(time.Now().Add(40*time.Minute)) {
		t.Errorf("due at %s, want 40 minutes after %s", due, before)
	}
	if got := aws.ToString(second.MessageAttributes[sqsworker.AttributeJobType].StringValue); got != "cleanup" || second.DelaySeconds != 60 {
		t.Errorf("second line: job type %q, delay %d; want cleanup, 60", got, second.DelaySeconds)
	}
	if _, hop := second.MessageAttributes[sqsworker.AttributeDueAt]; hop {
		t.Error("a 60-second delay needs no hop")
	}
}

func TestCLISendJobWithLongDelay(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	sent := decode[sendReport](t, want(t, exitOK, "send", queueName(queue.URL), "--body", `{"id":"j1"}`, "--job-type", "welcome-email", "-o", "json"))
	if len(sent.Sent) != 1 {
		t.Fatalf("send report = %+v", sent)
	}
	received := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue.URL), VisibilityTimeout: 60, MessageAttributeNames: []string{"All"},
	}, 1, testenv.ReceiveTimeout)
	if len(received) != 1 {
		t.Fatalf("queue holds %d messages, want 1", len(received))
	}
	message := received[0]
	if got := aws.ToString(message.MessageAttributes[sqsworker.AttributeJobType].StringValue); got != "welcome-email" || aws.ToString(message.MessageId) != sent.Sent[0].ID {
		t.Errorf("received job type %q id %s, want welcome-email %s", got, aws.ToString(message.MessageId), sent.Sent[0].ID)
	}
	if got := aws.ToString(message.MessageAttributes[sqsworker.AttributeJobID].StringValue); got == "" || got != sent.Sent[0].JobID {
		t.Errorf("received job id %q, the report says %q", got, sent.Sent[0].JobID)
	}

	r := want(t, exitOK, "send", queueName(queue.URL), "--body", `{"month":"2026-11"}`, "--job-type", "report", "--delay", "40m")
	if !strings.HasPrefix(r.stdout, "Sent message ") {
		t.Errorf("send --delay 40m printed %q", r.stdout)
	}
	testenv.Eventually(t, 10*time.Second, "the hop counted as delayed", func() bool {
		return testenv.QueueAttributes(t, client, queue.URL)["ApproximateNumberOfMessagesDelayed"] == "1"
	})

	fifo := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, ContentBasedDeduplication: true})
	r = cli(t, nil, "send", fifo.URL, "--body", "x", "--group", "g", "--delay", "40m", "-o", "json")
	failed := decode[sendReport](t, r)
	if r.code != exitError || len(failed.Failed) != 1 || !strings.Contains(failed.Failed[0].Error, "FIFO queues take no per-message delay") {
		t.Errorf("FIFO with a delay: exit %d, report %+v", r.code, failed)
	}
}
