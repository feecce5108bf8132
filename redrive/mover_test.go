package redrive_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/faultproxy"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// A filtered move moves exactly the matching messages and leaves the rest; a dry run
// before it changes nothing.
func TestMoverFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		filter string
		// bodies and reasons of the dead-lettered messages; want lists the ids to move.
		bodies  map[string]string
		reasons map[string]string
		want    []string
	}{
		{
			name:   "failure reason attribute",
			filter: "attr:failure-reason=HTTP410",
			bodies: map[string]string{
				"a1": `{"id":"a1"}`, "a2": `{"id":"a2"}`, "a3": `{"id":"a3"}`, "b1": `{"id":"b1"}`, "b2": `{"id":"b2"}`,
			},
			reasons: map[string]string{"a1": "HTTP410", "a2": "HTTP410", "a3": "HTTP410", "b1": "Timeout", "b2": "MalformedBody"},
			want:    []string{"a1", "a2", "a3"},
		},
		{
			name:   "JSON body field",
			filter: "json:payload.type=invoice",
			bodies: map[string]string{
				"i1": `{"id":"i1","payload":{"type":"invoice"}}`,
				"i2": `{"id":"i2","payload":{"type":"invoice","n":2}}`,
				"r1": `{"id":"r1","payload":{"type":"refund"}}`,
				"n1": `{"id":"n1","payload":"invoice"}`,
				"x1": `{"id":"x1"}`,
			},
			reasons: map[string]string{"i1": "HTTP500", "i2": "HTTP500", "r1": "HTTP500", "n1": "HTTP500", "x1": "HTTP500"},
			want:    []string{"i1", "i2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
			destination := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
			for id, text := range tc.bodies {
				deadLetter(t, client, queue.URL, &sqsworker.Message{ID: id, Body: text, ReceiveCount: 1}, tc.reasons[id])
			}
			filter, err := redrive.ParseFilter(tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			config := redrive.Config{Source: queue.DeadLetterQueueURL, Destination: destination.URL, Filter: filter, DryRun: true}

			dry := run(t, client, config)
			if dry.WouldMove != len(tc.want) || dry.Moved != 0 || dry.Skipped != len(tc.bodies)-len(tc.want) || dry.Batches != 0 {
				t.Fatalf("dry run = %+v, want %d to move, %d skipped, nothing sent", dry, len(tc.want), len(tc.bodies)-len(tc.want))
			}
			if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible != len(tc.bodies) || inFlight != 0 {
				t.Fatalf("after the dry run the DLQ holds %d visible, %d in flight; want all %d visible", visible, inFlight, len(tc.bodies))
			}
			assertEmpty(t, client, destination.URL)

			config.DryRun = false
			result := run(t, client, config)
			if result.Moved != len(tc.want) || result.Partial() {
				t.Fatalf("move = %+v, want %d moved", result, len(tc.want))
			}
			moved := countIDs(t, drain(t, client, destination.URL, len(tc.want)))
			left := countIDs(t, drain(t, client, queue.DeadLetterQueueURL, len(tc.bodies)-len(tc.want)))
			for id := range tc.bodies {
				wantMoved := contains(tc.want, id)
				if (wantMoved && (moved[id] != 1 || left[id] != 0)) || (!wantMoved && (moved[id] != 0 || left[id] != 1)) {
					t.Fatalf("message %s: %d in destination, %d in DLQ; want it moved = %v", id, moved[id], left[id], wantMoved)
				}
			}
		})
	}
}

func contains(list []string, value string) bool {
	for _, item := range list {
		if item == value {
			return true
		}
	}
	return false
}

func run(t testing.TB, api redrive.MoverAPI, config redrive.Config) *redrive.Result {
	t.Helper()
	mover, err := redrive.NewMover(api, config)
	if err != nil {
		t.Fatal(err)
	}
	result, err := mover.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, result)
	}
	return result
}

// A crash between the send and the delete leaves every message present at least once;
// running the move again completes it.
func TestMoverCrashBetweenSendAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	destination := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	var bodies []string
	for i := range 25 {
		bodies = append(bodies, body("c"+strconv.Itoa(i), 10))
	}
	sendAll(t, client, queue.DeadLetterQueueURL, bodies, nil)

	crashing := newRecorder(t, client)
	crashing.crashAtDelete = true
	mover, err := redrive.NewMover(crashing, redrive.Config{
		Source: queue.DeadLetterQueueURL, Destination: destination.URL, VisibilityTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	result, err := mover.Run(ctx)
	if !errors.Is(err, errCrash) {
		t.Fatalf("Run: err = %v, want the injected crash", err)
	}
	if result.Moved != 0 || len(crashing.requests) != 1 {
		t.Fatalf("before the crash: result %+v, %d send requests; want 0 moved and 1 request", result, len(crashing.requests))
	}
	crashing.assertDeletesFollowConfirmedSends(t)

	// The process is gone: its hidden messages come back after their visibility timeout.
	testenv.Eventually(t, 15*time.Second, "the DLQ's messages visible again", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible == len(bodies) && inFlight == 0
	})
	sent := crashing.requests[0].ids
	inDLQ := snapshot(t, client, queue.DeadLetterQueueURL, len(bodies))
	inDestination := snapshot(t, client, destination.URL, len(sent))
	for _, text := range bodies {
		id := idOf(t, text)
		if inDLQ[id] != 1 {
			t.Fatalf("message %s is in the DLQ %d times after the crash, want 1 (never deleted)", id, inDLQ[id])
		}
		if want := map[bool]int{true: 1, false: 0}[contains(sent, id)]; inDestination[id] != want {
			t.Fatalf("message %s is in the destination %d times, want %d", id, inDestination[id], want)
		}
	}

	// Recovery: the same move, run again, finishes the job (the crashed batch is duplicated).
	again := run(t, client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: destination.URL})
	if again.Moved != len(bodies) {
		t.Fatalf("second run moved %d, want %d", again.Moved, len(bodies))
	}
	assertEmpty(t, client, queue.DeadLetterQueueURL)
	final := countIDs(t, drain(t, client, destination.URL, len(bodies)+len(sent)))
	for _, text := range bodies {
		id := idOf(t, text)
		if want := map[bool]int{true: 2, false: 1}[contains(sent, id)]; final[id] != want {
			t.Fatalf("message %s is in the destination %d times, want %d (at least once, duplicated only if in the crashed batch)", id, final[id], want)
		}
	}
}

// C17: large messages are packed by count and bytes, attributes counted, limit read from
// the destination; a per-entry failure is retried alone; nothing lost, duplicated or
// deleted early.
func TestMoverBatchByteLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// maxSize is the MaximumMessageSize given to both queues.
		maxSize int
		// packed is true when some batch must hold more than one message.
		packed bool
	}{
		{name: "1 MiB", maxSize: 1024 * 1024, packed: true},
		{name: "300 KiB", maxSize: 300 * 1024, packed: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
			dlq := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
			setMaximumMessageSize(t, client, tc.maxSize, queue.URL, dlq.URL)
			maxSize, _ := strconv.Atoi(testenv.QueueAttributes(t, client, queue.URL)["MaximumMessageSize"])
			if maxSize != tc.maxSize {
				t.Fatalf("MaximumMessageSize = %d, want %d", maxSize, tc.maxSize)
			}

			want := map[string]map[string]string{} // body id -> attribute values
			attributesOf := func(id string) map[string]types.MessageAttributeValue {
				values := map[string]types.MessageAttributeValue{
					"tenant":  stringAttribute("tenant-" + id),
					"attempt": {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(id)))},
				}
				want[id] = map[string]string{"tenant": "tenant-" + id, "attempt": strconv.Itoa(len(id))}
				return values
			}
			for i := range 10 {
				id := "r" + strconv.Itoa(i)
				sendOne(t, client, &sqs.SendMessageInput{
					QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(body(id, 200*1024-len(body(id, 0)))), MessageAttributes: attributesOf(id),
				})
			}
			// One message of exactly MaximumMessageSize, attributes included.
			bigAttributes := attributesOf("big")
			attributeBytes := entrySize(types.SendMessageBatchRequestEntry{MessageBody: aws.String(""), MessageAttributes: bigAttributes})
			bigBody := body("big", maxSize-attributeBytes-len(body("big", 0)))
			if size := len(bigBody) + attributeBytes; size != maxSize {
				t.Fatalf("big message is %d bytes, want %d", size, maxSize)
			}
			sendOne(t, client, &sqs.SendMessageInput{QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(bigBody), MessageAttributes: bigAttributes})

			recorder := newRecorder(t, client)
			recorder.failOnce = "r4"
			result := run(t, recorder, redrive.Config{Source: dlq.URL, Destination: queue.URL})
			if result.Moved != 11 || result.Partial() || result.MaxBatchBytes != maxSize {
				t.Fatalf("result = %+v, want 11 moved with batches packed to %d bytes", result, maxSize)
			}

			multi := false
			r4Sends := 0
			for i, request := range recorder.requests {
				if request.entries > sqsinfo.MaxBatchEntries || request.bytes > maxSize {
					t.Fatalf("request %d: %d entries, %d bytes; limits are 10 and %d", i, request.entries, request.bytes, maxSize)
				}
				multi = multi || request.entries > 1
				r4Sends += strings.Count(strings.Join(request.ids, ","), "r4")
			}
			if multi != tc.packed {
				t.Fatalf("some batch held several messages = %v, want %v (requests %+v)", multi, tc.packed, recorder.requests)
			}
			if r4Sends != 2 {
				t.Fatalf("r4 was sent %d times, want 2 (the failed entry, then its retry alone)", r4Sends)
			}
			recorder.assertDeletesFollowConfirmedSends(t)

			arrived := drain(t, client, queue.URL, 11)
			counts := countIDs(t, arrived)
			if len(arrived) != 11 || len(counts) != 11 {
				t.Fatalf("destination received %d messages (%d distinct), want 11 exactly once: %v", len(arrived), len(counts), counts)
			}
			for _, message := range arrived {
				id := idOf(t, aws.ToString(message.Body))
				got := map[string]string{}
				for name, value := range message.MessageAttributes {
					got[name] = aws.ToString(value.StringValue)
				}
				if id != "big" { // big is at the limit: it moves without the redrive count and move id
					want[id][redrive.AttributeRedriveCount] = "1"
					want[id][redrive.AttributeMoveID] = result.MoveID
				}
				if fmt.Sprint(got) != fmt.Sprint(want[id]) {
					t.Fatalf("message %s arrived with attributes %v, want %v", id, got, want[id])
				}
			}
			assertEmpty(t, client, dlq.URL)
		})
	}
}

// A message larger than the destination's MaximumMessageSize is reported and stays in
// the DLQ; the rest move.
func TestMoverTooLargeStays(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	dlq := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	destination := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	setMaximumMessageSize(t, client, 2048, destination.URL)
	sendAll(t, client, dlq.URL, []string{body("small", 100), body("large", 3000)}, nil)

	result := run(t, client, redrive.Config{Source: dlq.URL, Destination: destination.URL})
	if result.Moved != 1 || len(result.TooLarge) != 1 || !result.Partial() {
		t.Fatalf("result = %+v, want 1 moved and 1 too large", result)
	}
	if left := countIDs(t, drain(t, client, dlq.URL, 1)); left["large"] != 1 || len(left) != 1 {
		t.Fatalf("DLQ holds %v, want only the large message", left)
	}
}

// C18: a FIFO redrive within the deduplication window uses a new deduplication id,
// keeps the group, and warns that the order changed; the old id would be dropped.
func TestMoverFIFODeduplication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true, ContentBasedDeduplication: true, MaxReceiveCount: 2})
	start := time.Now()
	for _, key := range []string{"k1", "k2", "k3"} {
		sendOne(t, client, &sqs.SendMessageInput{
			QueueUrl: aws.String(queue.URL), MessageBody: aws.String(`{"id":"` + key + `"}`), MessageGroupId: aws.String("g1"),
		})
	}

	// The worker: k2 fails while the bug is there; every other message succeeds.
	broken := true
	effects := map[string]int{}
	var order []string
	consume := func() int {
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, message := range output.Messages {
			key := idOf(t, aws.ToString(message.Body))
			if key == "k2" && broken {
				release(t, client, queue.URL, []types.Message{message})
				continue
			}
			effects[key]++
			order = append(order, key)
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: message.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return len(output.Messages)
	}
	testenv.Eventually(t, 30*time.Second, "k1 and k3 handled, k2 dead-lettered", func() bool {
		consume()
		visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return effects["k1"] == 1 && effects["k3"] == 1 && visible == 1
	})
	broken = false

	// Negative control: k2 sent back with its original deduplication id (content-based:
	// the SHA-256 of the body) inside the 5-minute window is accepted and dropped.
	sum := sha256.Sum256([]byte(`{"id":"k2"}`))
	original := hex.EncodeToString(sum[:])
	sendOne(t, client, &sqs.SendMessageInput{
		QueueUrl: aws.String(queue.URL), MessageBody: aws.String(`{"id":"k2"}`), MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String(original),
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		consume()
	}
	if effects["k2"] != 0 {
		t.Fatalf("k2 resent with its original deduplication id was handled %d times, want dropped", effects["k2"])
	}

	if elapsed := time.Since(start); elapsed > 2*time.Minute {
		t.Fatalf("redrive starts %s after the first send, want within 2 minutes (inside the window)", elapsed)
	}
	recorder := newRecorder(t, client)
	result := run(t, recorder, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	if result.Moved != 1 {
		t.Fatalf("result = %+v, want k2 moved", result)
	}
	entry := recorder.requests[0].input.Entries[0]
	if group := aws.ToString(entry.MessageGroupId); group != "g1" {
		t.Fatalf("k2 sent with group %q, want g1", group)
	}
	dedup := aws.ToString(entry.MessageDeduplicationId)
	if dedup == original || !strings.HasSuffix(dedup, "-r1") {
		t.Fatalf("k2 sent with deduplication id %q, want a new one ending in -r1 (original %s)", dedup, original)
	}
	t.Logf("k2: deduplication id in the DLQ + redrive suffix = %s (content-based original %s)", dedup, original)
	if len(result.Warnings) != 1 || !strings.Contains(result.Warnings[0], `group "g1"`) || !strings.Contains(result.Warnings[0], "ordered after") {
		t.Fatalf("warnings = %q, want one saying group g1's order changed", result.Warnings)
	}
	t.Logf("warning: %s", result.Warnings[0])

	testenv.Eventually(t, 15*time.Second, "k2 handled after the redrive", func() bool {
		consume()
		return effects["k2"] >= 1
	})
	if n := consume(); n != 0 || effects["k2"] != 1 {
		t.Fatalf("k2 handled %d times (and %d more messages), want exactly once", effects["k2"], n)
	}
	if fmt.Sprint(order) != "[k1 k3 k2]" {
		t.Fatalf("handling order = %v, want [k1 k3 k2]: k2 now comes after k3", order)
	}
	assertEmpty(t, client, queue.DeadLetterQueueURL)
}

// A message moved before carries x-redrive-count; the next move counts on from it
// (1 becomes 2), replacing the attribute rather than adding one.
func TestMoverRedriveCountCountsOn(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	sendOne(t, client, &sqs.SendMessageInput{
		QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageBody: aws.String(body("again", 0)),
		MessageAttributes: map[string]types.MessageAttributeValue{
			redrive.AttributeRedriveCount: {DataType: aws.String("Number"), StringValue: aws.String("1")},
			"tenant":                      stringAttribute("T1"),
		},
	})
	result := run(t, client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	if result.Moved != 1 {
		t.Fatalf("result = %+v, want 1 moved", result)
	}
	moved := drain(t, client, queue.URL, 1)[0]
	if len(moved.MessageAttributes) != 3 || aws.ToString(moved.MessageAttributes[redrive.AttributeRedriveCount].StringValue) != "2" ||
		aws.ToString(moved.MessageAttributes["tenant"].StringValue) != "T1" || aws.ToString(moved.MessageAttributes[redrive.AttributeMoveID].StringValue) != result.MoveID {
		t.Fatalf("moved with attributes %+v, want tenant=T1, %s=2 and %s=%s", moved.MessageAttributes, redrive.AttributeRedriveCount, redrive.AttributeMoveID, result.MoveID)
	}
}

// TestMoverKeepsTheTraceHeader: a dead letter's AWSTraceHeader system attribute is sent
// with it, unchanged, so the redriven attempt stays in its producer's trace.
func TestMoverKeepsTheTraceHeader(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	sendOne(t, client, &sqs.SendMessageInput{
		QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageBody: aws.String(body("traced", 0)),
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(header)},
		},
	})
	result := run(t, client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	if result.Moved != 1 {
		t.Fatalf("result = %+v, want 1 moved", result)
	}
	if got := drain(t, client, queue.URL, 1)[0].Attributes["AWSTraceHeader"]; got != header {
		t.Fatalf("moved with AWSTraceHeader %q, want %q", got, header)
	}
}

// A receive whose response is lost (the connection reset after SQS handed the messages
// out) leaves them hidden for the mover's VisibilityTimeout while SQS counts none visible.
// A mover that meets that state (here the next run, after the first stopped on the
// receive's error; under load, the same run after an SDK retry) used to stop at once,
// moving nothing of them (seen as a flaky C17: 10 of 11 moved). It now waits for them to
// come back, within its VisibilityTimeout, and moves every message.
func TestMoverLostReceiveResponse(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	dlq := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	destination := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	sendAll(t, client, dlq.URL, []string{body("a", 10), body("b", 10), body("c", 10)}, nil)

	proxy := faultproxy.New(t, os.Getenv("AWS_ENDPOINT_URL_SQS"))
	proxy.SetRules(faultproxy.Rule{Operations: []string{"ReceiveMessage"}, Fraction: 1, Times: 1, Reset: true, ResponseContains: `"Messages"`})
	proxied := sqs.NewFromConfig(testenv.AWSConfig(t), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(proxy.URL)
		o.RetryMaxAttempts = 1 // the lost answer is not retried by the SDK: the mover sees it
	})
	result, err := mustMover(t, proxied, redrive.Config{Source: dlq.URL, Destination: destination.URL,
		VisibilityTimeout: 2 * time.Second, WaitTime: time.Second}).Run(t.Context())
	faulted := 0
	for _, call := range proxy.Calls() {
		if call.Fault == "reset" {
			faulted++
		}
	}
	if faulted != 1 {
		t.Fatalf("%d receives reset, want 1 (the scenario did not happen)", faulted)
	}
	if err != nil {
		// The lost answer is an error of that receive; a second run moves the rest.
		result, err = mustMover(t, proxied, redrive.Config{Source: dlq.URL, Destination: destination.URL,
			VisibilityTimeout: 2 * time.Second, WaitTime: time.Second}).Run(t.Context())
		if err != nil {
			t.Fatalf("second Run: %v (result %+v)", err, result)
		}
	}
	if moved := countIDs(t, drain(t, client, destination.URL, 3)); len(moved) != 3 {
		t.Fatalf("destination holds %v, want a, b and c once each (result %+v)", moved, result)
	}
	assertEmpty(t, client, dlq.URL)
}

func mustMover(t testing.TB, api redrive.MoverAPI, config redrive.Config) *redrive.Mover {
	t.Helper()
	mover, err := redrive.NewMover(api, config)
	if err != nil {
		t.Fatal(err)
	}
	return mover
}
