package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

func TestParseDelay(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]time.Duration{
		"0": 0, "90": 90 * time.Second, "90s": 90 * time.Second, "15m": 15 * time.Minute, "900": 15 * time.Minute,
		"15m1s": 15*time.Minute + time.Second, "40m": 40 * time.Minute, "336h": 14 * 24 * time.Hour,
	} {
		if got, err := parseDelay(text); err != nil || got != want {
			t.Errorf("parseDelay(%q) = %s, %v; want %s", text, got, err, want)
		}
	}
	for _, text := range []string{"3600000", "-5", "1.5s", "337h", "soon"} {
		if got, err := parseDelay(text); err == nil || !strings.Contains(err.Error(), "0 to 14 days") {
			t.Errorf("parseDelay(%q) = %s, %v; want an error naming 0 to 14 days", text, got, err)
		}
	}
}

// TestSendDelayValidated: the command refuses an out-of-range --delay (exit 2, before any
// AWS call) and a --file line's delay_seconds out of range.
func TestSendDelayValidated(t *testing.T) {
	t.Parallel()
	for _, delay := range []string{"3600000", "-5", "1193h"} {
		r := cli(t, nil, "send", "q", "--body", "x", "--delay", delay)
		if r.code != exitUsage || !strings.Contains(r.stderr, "0 to 14 days") {
			t.Errorf("send --delay %s: exit %d, stderr %q; want exit 2 naming 0 to 14 days", delay, r.code, r.stderr)
		}
	}
	_, err := readMessages(strings.NewReader(`{"body":"x","delay_seconds":3600000}`), "-", fileMessage{})
	if err == nil || !strings.Contains(err.Error(), "0 to 14 days") {
		t.Errorf("delay_seconds 3600000 in a file: %v, want an error naming 0 to 14 days", err)
	}
}

// failingSecondBatch accepts the first SendMessageBatch and fails every later one. It
// answers GetQueueAttributes with a 256 KiB MaximumMessageSize and takes no SendMessage.
type failingSecondBatch struct{ calls int }

func (f *failingSecondBatch) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("fake: no SendMessage")
}

func (f *failingSecondBatch) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": "262144"}}, nil
}

func (f *failingSecondBatch) SendMessageBatch(_ context.Context, input *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.calls++
	if f.calls > 1 {
		return nil, errors.New("connection reset")
	}
	output := &sqs.SendMessageBatchOutput{}
	for _, entry := range input.Entries {
		output.Successful = append(output.Successful, types.SendMessageBatchResultEntry{Id: entry.Id, MessageId: aws.String("id-" + aws.ToString(entry.Id))})
	}
	return output, nil
}

// TestSendReportsWhatWasSentWhenALaterBatchFails: 15 lines, the second batch fails: the
// 10 sent are reported (text and JSON), the 5 others as not sent, exit 3.
func TestSendReportsWhatWasSentWhenALaterBatchFails(t *testing.T) {
	t.Parallel()
	var messages []fileMessage
	for i := range 15 {
		messages = append(messages, fileMessage{Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	queue := &sqsinfo.Queue{URL: "http://127.0.0.1:4566/000000000000/orders", MaximumMessageSize: 262144}
	for _, output := range []string{outputText, outputJSON} {
		var stdout, stderr bytes.Buffer
		a := newApp(&stdout, &stderr)
		a.output = output
		report, sendErr := a.sendMessages(context.Background(), &failingSecondBatch{}, queue, messages)
		err := a.printSendReport(report, len(messages), sendErr)
		if code := exitCode(err); code != exitPartial {
			t.Errorf("%s: exit %d (%v), want %d", output, code, err, exitPartial)
		}
		if output == outputText {
			text := stdout.String()
			if !strings.Contains(text, "Sent 10 of 15 messages to orders.") || !strings.Contains(text, "Line 11 not sent: ") || !strings.Contains(text, "connection reset") || !strings.Contains(text, "Line 15 not sent: ") {
				t.Errorf("text output:\n%s", text)
			}
			continue
		}
		var got sendReport
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("JSON output %q: %v", stdout.String(), err)
		}
		if len(got.Sent) != 10 || len(got.Failed) != 5 || got.Sent[0].Line != 1 || got.Failed[0].Line != 11 || got.Failed[4].Line != 15 || got.Error == "" {
			t.Errorf("JSON report %+v", got)
		}
	}
	// The first batch failing: nothing sent, exit 1, and the lines still reported.
	var stdout bytes.Buffer
	a := newApp(&stdout, &stdout)
	report, sendErr := a.sendMessages(context.Background(), &failingSecondBatch{calls: 1}, queue, messages)
	if err := a.printSendReport(report, len(messages), sendErr); exitCode(err) != exitError || !strings.Contains(stdout.String(), "Sent 0 of 15 messages") {
		t.Errorf("first batch failing: exit %d (%v), output %q", exitCode(err), err, stdout.String())
	}
}

// TestSendFIFONeedsAGroup: a message for a FIFO queue without a message group id is
// refused before anything is sent, naming the --group flag (it used to fail at the send
// with the library's "the job has no GroupID" and "Line 1 not sent").
func TestSendFIFONeedsAGroup(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, ContentBasedDeduplication: true, NoDeadLetterQueue: true})
	r := cli(t, nil, "send", queue.URL, "--body", `{"jobId":"j-2"}`)
	if r.code != exitUsage || !strings.Contains(r.stderr, "needs a message group id; give --group") {
		t.Fatalf("send without --group: exit %d, stderr %q; want exit %d naming --group", r.code, r.stderr, exitUsage)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible+inFlight != 0 {
		t.Fatalf("queue holds %d messages, want none sent", visible+inFlight)
	}
	want(t, exitOK, "send", queue.URL, "--body", `{"jobId":"j-2"}`, "--group", "g1")
}
