package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/redrive"
)

// n11 is the starting state of CASES.md N11: queues q and q2 (maxReceiveCount 2) share
// one dead-letter queue; d1 (three message attributes and an AWSTraceHeader) failed
// twice in q and d2 (tenant=T2) twice in q2, and both are in q-dlq.
type n11 struct {
	client *sqs.Client
	q, q2  testenv.Queue
	dlq    string // q-dlq's name
	d1, d2 string // message ids
}

// The message attributes d1 is sent with: a String, a Number and a Binary that is not
// UTF-8, to be compared byte for byte after every move.
func n11Attributes() map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("T1")},
		"prio":   {DataType: aws.String("Number"), StringValue: aws.String("5")},
		"sig":    {DataType: aws.String("Binary"), BinaryValue: []byte{0x00, 0xff, 0x10, 0x80, 0xc3}},
	}
}

const n11TraceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

func newN11(t *testing.T) *n11 {
	t.Helper()
	ctx := context.Background()
	client := testenv.SQS(t)
	s := &n11{client: client}
	s.q = testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 2})
	s.q2 = testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": s.q.DeadLetterQueueARN, "maxReceiveCount": 2})
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(s.q2.URL), Attributes: map[string]string{"RedrivePolicy": string(policy)},
	}); err != nil {
		t.Fatal(err)
	}
	s.q2.DeadLetterQueueURL, s.q2.DeadLetterQueueARN = s.q.DeadLetterQueueURL, s.q.DeadLetterQueueARN
	s.dlq = queueName(s.q.DeadLetterQueueURL)

	sent, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(s.q.URL), MessageBody: aws.String(`{"id":"d1"}`), MessageAttributes: n11Attributes(),
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(n11TraceHeader)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.d1 = aws.ToString(sent.MessageId)
	sent, err = client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(s.q2.URL), MessageBody: aws.String(`{"id":"d2"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("T2")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.d2 = aws.ToString(sent.MessageId)

	// Both fail twice (received, then released at once); the receive after the second
	// moves each to q-dlq.
	testenv.Eventually(t, 30*time.Second, "d1 and d2 in q-dlq after two failed receives each", func() bool {
		for _, url := range []string{s.q.URL, s.q2.URL} {
			output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, message := range output.Messages {
				if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
					QueueUrl: aws.String(url), ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0,
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		visible, inFlight := testenv.Counts(t, client, s.q.DeadLetterQueueURL)
		return visible == 2 && inFlight == 0
	})
	return s
}

// firstReceive waits (long polls, up to 20 s in all) for the one message of queue url
// and returns its first delivery, with every attribute; the queue must then be empty.
func firstReceive(t *testing.T, client *sqs.Client, url string) types.Message {
	t.Helper()
	var got []types.Message
	deadline := time.Now().Add(20 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2, VisibilityTimeout: 60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		got = output.Messages
	}
	if len(got) != 1 {
		t.Fatalf("%s: received %d messages within 20 s, want exactly 1", queueName(url), len(got))
	}
	if visible, inFlight := testenv.Counts(t, client, url); visible != 0 || inFlight != 1 {
		t.Fatalf("%s holds %d visible and %d in flight besides, want only the one received", queueName(url), visible, inFlight)
	}
	return got[0]
}

// receiveAll waits (up to 20 s) until the queues at urls have handed out n distinct
// messages in all, and returns each message's first delivery, by queue; the queues must
// then hold nothing more.
func receiveAll(t *testing.T, client *sqs.Client, n int, urls ...string) map[string][]types.Message {
	t.Helper()
	got := map[string][]types.Message{}
	seen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		for _, url := range urls {
			output, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60,
				MessageAttributeNames:       []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, message := range output.Messages {
				if id := aws.ToString(message.MessageId); !seen[id] {
					seen[id] = true
					got[url] = append(got[url], message)
				}
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("received %d distinct messages within 20 s from %v, want %d", len(seen), urls, n)
	}
	for _, url := range urls {
		if visible, _ := testenv.Counts(t, client, url); visible != 0 {
			t.Fatalf("%s still holds %d visible messages, want none beyond the %d received", queueName(url), visible, n)
		}
	}
	return got
}

// sameAttributes fails unless got holds exactly want, byte for byte.
func sameAttributes(t *testing.T, what string, got, want map[string]types.MessageAttributeValue) {
	t.Helper()
	plain := func(in map[string]types.MessageAttributeValue) map[string][3]string {
		out := map[string][3]string{}
		for name, value := range in {
			out[name] = [3]string{aws.ToString(value.DataType), aws.ToString(value.StringValue), string(value.BinaryValue)}
		}
		return out
	}
	if !reflect.DeepEqual(plain(got), plain(want)) {
		t.Errorf("%s: message attributes %q, want %q", what, plain(got), plain(want))
	}
}

func receiveCount(t *testing.T, message types.Message) int {
	t.Helper()
	count, err := strconv.Atoi(message.Attributes["ApproximateReceiveCount"])
	if err != nil {
		t.Fatalf("ApproximateReceiveCount %q: %v", message.Attributes["ApproximateReceiveCount"], err)
	}
	return count
}

// TestDeadLetterMovesKeepAttributesAndCounts is CASES.md N11 on the SQS emulator
// (LocalStack or ElasticMQ: make test, make test-elasticmq), through the CLI.
func TestDeadLetterMovesKeepAttributesAndCounts(t *testing.T) {
	t.Parallel()

	// (a) dlq list: d1's attributes byte for byte, its source queue from
	// DeadLetterQueueSourceArn, its receive count kept from q; a warning about the
	// receive the listing used.
	t.Run("a dlq list", func(t *testing.T) {
		t.Parallel()
		s := newN11(t)
		r := want(t, exitOK, "dlq", "list", s.dlq, "-o", "json")
		listing := decode[struct {
			Messages []struct {
				ID           string                                `json:"id"`
				SourceQueue  string                                `json:"source_queue"`
				ReceiveCount int                                   `json:"receive_count"`
				Attributes   map[string]sqsworker.MessageAttribute `json:"message_attributes"`
			} `json:"messages"`
			ReceivesUsed int `json:"receives_used"`
			Released     int `json:"released"`
		}](t, r)
		if len(listing.Messages) != 2 || listing.ReceivesUsed != 2 || listing.Released != 2 {
			t.Fatalf("listing = %+v, want d1 and d2, 2 receives used, 2 released", listing)
		}
		for _, letter := range listing.Messages {
			if letter.ID != s.d1 {
				continue
			}
			got := map[string]types.MessageAttributeValue{}
			for name, value := range letter.Attributes {
				got[name] = types.MessageAttributeValue{DataType: aws.String(value.DataType), BinaryValue: value.BinaryValue}
				if value.BinaryValue == nil {
					got[name] = types.MessageAttributeValue{DataType: aws.String(value.DataType), StringValue: aws.String(value.StringValue)}
				}
			}
			sameAttributes(t, "d1 in dlq list", got, n11Attributes())
			if letter.SourceQueue != s.q.ARN {
				t.Errorf("d1 source queue = %q, want q's ARN %s (DeadLetterQueueSourceArn)", letter.SourceQueue, s.q.ARN)
			}
			if letter.ReceiveCount < 2 {
				t.Errorf("d1 receive count = %d, want at least 2 (kept from q)", letter.ReceiveCount)
			}
			t.Logf("d1 in q-dlq: receive count %d (2 in q, the receive that moved it, this listing's)", letter.ReceiveCount)
		}
		if wantWarning := "warning: looking used 2 receives on " + s.dlq; !strings.Contains(r.stderr, wantWarning) {
			t.Errorf("stderr %q, want %q", r.stderr, wantWarning)
		}
		if visible, inFlight := testenv.Counts(t, s.client, s.q.DeadLetterQueueURL); visible != 2 || inFlight != 0 {
			t.Errorf("q-dlq after the listing: %d visible, %d in flight; want both released", visible, inFlight)
		}
	})

	// (b) native redrive without a destination: d1 back to q, d2 back to q2.
	t.Run("b native redrive", func(t *testing.T) {
		t.Parallel()
		s := newN11(t)
		task := decode[redrive.MoveTask](t, want(t, exitOK, "redrive", "start", s.dlq, "--original-sources", "--interval", "100ms", "-o", "json"))
		// SQS lists DestinationArn only when StartMessageMoveTask had one.
		if task.Status != redrive.MoveTaskCompleted || task.Moved != 2 || task.DestinationARN != "" {
			t.Fatalf("task = %+v, want COMPLETED, 2 moved, no destination", task)
		}
		t.Run("to move", func(t *testing.T) {
			testenv.SkipOn(t, testenv.ElasticMQMoveTaskToMoveCountsDown)
			if task.ToMove != 2 {
				t.Errorf("task = %+v, want 2 to move", task)
			}
		})
		if visible, inFlight := testenv.Counts(t, s.client, s.q.DeadLetterQueueURL); visible != 0 || inFlight != 0 {
			t.Errorf("q-dlq after the task: %d visible, %d in flight; want empty", visible, inFlight)
		}
		// Each message's first delivery after the move, wherever it went.
		arrived := receiveAll(t, s.client, 2, s.q.URL, s.q2.URL)
		byBody := map[string]types.Message{}
		queueOf := map[string]string{}
		for url, messages := range arrived {
			for _, message := range messages {
				byBody[aws.ToString(message.Body)] = message
				queueOf[aws.ToString(message.Body)] = url
				t.Logf("%s arrived in %s: message id %s, ApproximateReceiveCount %s",
					aws.ToString(message.Body), queueName(url), aws.ToString(message.MessageId), message.Attributes["ApproximateReceiveCount"])
			}
		}
		d1, d2 := byBody[`{"id":"d1"}`], byBody[`{"id":"d2"}`]
		if d1.Body == nil || d2.Body == nil {
			t.Fatalf("after the move the queues hold %v, want d1 and d2", arrived)
		}
		sameAttributes(t, "d1 after the move", d1.MessageAttributes, n11Attributes())
		if aws.ToString(d2.MessageAttributes["tenant"].StringValue) != "T2" {
			t.Errorf("d2 arrived with attributes %v, want tenant=T2", d2.MessageAttributes)
		}
		t.Run("each back to its own source queue", func(t *testing.T) {
			testenv.SkipOn(t, testenv.ElasticMQRedrivesToOneSourceQueue)
			if queueOf[`{"id":"d1"}`] != s.q.URL || queueOf[`{"id":"d2"}`] != s.q2.URL {
				t.Errorf("d1 went to %s and d2 to %s; want q and q2", queueName(queueOf[`{"id":"d1"}`]), queueName(queueOf[`{"id":"d2"}`]))
			}
		})
		t.Run("redriven as new messages", func(t *testing.T) {
			testenv.SkipOn(t, testenv.LocalStackRedriveKeepsTheMessage)
			for name, message := range map[string]types.Message{"d1": d1, "d2": d2} {
				if count := receiveCount(t, message); count != 1 {
					t.Errorf("%s's first receive after the move shows ApproximateReceiveCount %d, want 1", name, count)
				}
			}
		})
	})

	// (c) a client-side filtered move: only d1, with x-redrive-count=1 (and the move's
	// x-redrive-move-id); d2 stays in
	// q-dlq, visible at once. (That the DLQ copy is deleted only after SendMessageBatch
	// confirmed its entry is TestMoverBatchByteLimit's recorder check.)
	t.Run("c filtered move", func(t *testing.T) {
		t.Parallel()
		s := newN11(t)
		report := decode[moveReport](t, want(t, exitOK, "redrive", "move", "--from", s.dlq, "--to", queueName(s.q.URL),
			"--filter", "attr:tenant=T1", "-o", "json"))
		if report.Result.Moved != 1 || report.Result.Skipped != 1 || report.Result.Received != 2 {
			t.Fatalf("move result = %+v, want 1 moved and 1 skipped of 2", report.Result)
		}
		if visible, inFlight := testenv.Counts(t, s.client, s.q.DeadLetterQueueURL); visible != 1 || inFlight != 0 {
			t.Errorf("q-dlq right after the move: %d visible, %d in flight; want d2, visible at once", visible, inFlight)
		}
		d1 := firstReceive(t, s.client, s.q.URL)
		wantAttributes := n11Attributes()
		wantAttributes[redrive.AttributeRedriveCount] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String("1")}
		wantAttributes[redrive.AttributeMoveID] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(report.Result.MoveID)}
		if aws.ToString(d1.Body) != `{"id":"d1"}` {
			t.Fatalf("q received %s, want d1", aws.ToString(d1.Body))
		}
		sameAttributes(t, "d1 moved to q", d1.MessageAttributes, wantAttributes)
		if count := receiveCount(t, d1); count != 1 {
			t.Errorf("d1's first receive in q shows ApproximateReceiveCount %d, want 1", count)
		}
		if visible, inFlight := testenv.Counts(t, s.client, s.q2.URL); visible != 0 || inFlight != 0 {
			t.Errorf("q2 holds %d+%d, want nothing (d2 stays in q-dlq)", visible, inFlight)
		}
		left := firstReceive(t, s.client, s.q.DeadLetterQueueURL)
		if aws.ToString(left.MessageId) != s.d2 {
			t.Errorf("q-dlq holds %s, want d2 %s", aws.ToString(left.MessageId), s.d2)
		}
	})

	// (d) a destination deleted beforehand: refused before anything is received.
	t.Run("d missing destination", func(t *testing.T) {
		t.Parallel()
		s := newN11(t)
		gone := testenv.NewQueue(t, s.client, testenv.QueueOptions{NoDeadLetterQueue: true})
		if _, err := s.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(gone.URL)}); err != nil {
			t.Fatal(err)
		}
		name := queueName(gone.URL)
		testenv.Eventually(t, 70*time.Second, name+" reported missing", func() bool {
			_, err := s.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
			return err != nil
		})
		for _, to := range []string{name, gone.URL} {
			r := want(t, exitError, "redrive", "move", "--from", s.dlq, "--to", to)
			if wantText := fmt.Sprintf("destination queue %s does not exist; nothing was moved", name); !strings.Contains(r.stderr, wantText) {
				t.Errorf("--to %s: stderr %q, want %q", to, r.stderr, wantText)
			}
			if visible, inFlight := testenv.Counts(t, s.client, s.q.DeadLetterQueueURL); visible != 2 || inFlight != 0 {
				t.Errorf("--to %s: q-dlq holds %d visible and %d in flight, want 2 and none received", to, visible, inFlight)
			}
		}
	})

	// (e) a message with 10 message attributes (the SQS maximum) moves unchanged; the
	// redrive count goes to the log only.
	t.Run("e ten attributes", func(t *testing.T) {
		t.Parallel()
		client := testenv.SQS(t)
		queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
		ten := map[string]types.MessageAttributeValue{}
		for i := range 10 {
			ten[fmt.Sprintf("a%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(strconv.Itoa(i))}
		}
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageBody: aws.String(`{"id":"e1"}`), MessageAttributes: ten,
		}); err != nil {
			t.Fatal(err)
		}
		r := want(t, exitOK, "redrive", "move", "--from", queueName(queue.DeadLetterQueueURL), "--to", queueName(queue.URL))
		if !strings.HasPrefix(r.stdout, "Moved 1 of 1") {
			t.Errorf("stdout %q, want Moved 1 of 1", r.stdout)
		}
		if !strings.Contains(r.stderr, "moved without "+redrive.AttributeRedriveCount) || !strings.Contains(r.stderr, "redrive_count=1") {
			t.Errorf("stderr %q, want the redrive count logged", r.stderr)
		}
		moved := firstReceive(t, client, queue.URL)
		sameAttributes(t, "the message with 10 attributes", moved.MessageAttributes, ten)
	})
}
