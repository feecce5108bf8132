package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

const (
	standardURL = "http://127.0.0.1:4566/000000000000/jobs"
	fifoURL     = "http://127.0.0.1:4566/000000000000/jobs.fifo"
)

func newProducer(t testing.TB, api API, config Config) *Producer {
	t.Helper()
	p, err := New(api, config)
	require.NoError(t, err)
	return p
}

func TestSendJSONJobWithItsAttributes(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{TraceContext: func(ctx context.Context) map[string]string {
		return map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": ""}
	}})
	id, err := p.Send(context.Background(), standardURL, Job{
		Type: "welcome-email", Payload: map[string]string{"to": "a@example.com"},
		Delay: 1500 * time.Millisecond, IdempotencyKey: "user-7", GroupID: "tenant-3",
	})
	require.NoError(t, err)
	assert.Equal(t, "m-1", id)
	sent := fake.sent()
	require.Len(t, sent, 1)
	assert.Equal(t, `{"to":"a@example.com"}`, sent[0].body)
	assert.Equal(t, "welcome-email", sent[0].attribute(sqsworker.AttributeJobType))
	assert.Equal(t, "user-7", sent[0].attribute(sqsworker.AttributeIdempotencyKey))
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", sent[0].attribute("traceparent"))
	assert.NotContains(t, sent[0].attributes, "tracestate", "empty values are not sent (SQS rejects them)")
	assert.EqualValues(t, 2, sent[0].delay, "rounded up, never early")
	assert.Equal(t, "tenant-3", sent[0].group, "a fair queue's tenant key on a standard queue")
	assert.Empty(t, sent[0].dedup)

	_, err = p.Send(context.Background(), standardURL, Job{Body: "raw"})
	require.NoError(t, err)
	assert.Equal(t, 1, fake.attributeReads[standardURL], "MaximumMessageSize read once per queue")
}

func TestSendRejectsInvalidJobs(t *testing.T) {
	p := newProducer(t, newFake(), Config{})
	tooMany := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		tooMany["a"+strconv.Itoa(i)] = stringValue("x")
	}
	for name, tc := range map[string]struct {
		queue string
		job   Job
		want  string
	}{
		"both":             {standardURL, Job{Payload: 1, Body: "1"}, "both Payload and Body"},
		"neither":          {standardURL, Job{Type: "t"}, "neither Payload nor Body"},
		"unencodable":      {standardURL, Job{Type: "t", Payload: func() {}}, `encoding the "t" job's payload`},
		"negative delay":   {standardURL, Job{Body: "x", Delay: -time.Second}, "negative"},
		"dedup standard":   {standardURL, Job{Body: "x", DeduplicationID: "d"}, "takes no DeduplicationID"},
		"fifo no group":    {fifoURL, Job{Body: "x"}, "has no GroupID"},
		"fifo delay":       {fifoURL, Job{Body: "x", GroupID: "g", Delay: time.Second}, "take no per-message delay"},
		"attributes":       {standardURL, Job{Body: "x", Type: "t", Attributes: tooMany}, "10 user attributes + "},
		"unique, no store": {standardURL, Job{Body: "x", UniqueKey: "k"}, "Config.Unique is nil"},
	} {
		_, err := p.Send(context.Background(), tc.queue, tc.job)
		assert.ErrorContains(t, err, tc.want, name)
	}
	assert.Empty(t, p.api.(*fakeSQS).sent(), "nothing sent")
}

// TestTooManyAttributesNamesTheNumbers: a job whose own attributes and sqsworker's pass
// SQS's 10 is refused before any service call, naming both numbers; the trace context is
// never counted: past the budget it is left out of the message attributes and travels in
// the AWSTraceHeader system attribute.
func TestTooManyAttributesNamesTheNumbers(t *testing.T) {
	fake := newFake()
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	p := newProducer(t, fake, Config{TraceContext: func(context.Context) map[string]string {
		return map[string]string{"traceparent": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", "tracestate": "a=b", AttributeAWSTraceHeader: header}
	}})
	attributes := func(n int) map[string]types.MessageAttributeValue {
		out := map[string]types.MessageAttributeValue{}
		for i := range n {
			out["a"+strconv.Itoa(i)] = stringValue("x")
		}
		return out
	}
	_, err := Prepare(standardURL, Job{Body: "x", Type: "t", Attributes: attributes(10)})
	require.ErrorIs(t, err, ErrTooManyAttributes)
	var tooMany *TooManyAttributesError
	require.ErrorAs(t, err, &tooMany)
	assert.Equal(t, 10, tooMany.User)
	assert.Equal(t, 10, tooMany.Limit)
	assert.Contains(t, err.Error(), fmt.Sprintf("producer: 10 user attributes + %d sqsworker attribute", tooMany.Own))
	_, err = p.Send(context.Background(), standardURL, Job{Body: "x", Type: "t", Attributes: attributes(10)})
	require.ErrorIs(t, err, ErrTooManyAttributes)
	require.Empty(t, fake.sent(), "refused before any call")

	prepared, err := Prepare(standardURL, Job{Body: "x", Type: "t"})
	require.NoError(t, err)
	own := len(prepared.Attributes) // sqsworker's attributes of a typed job
	fits, spent, full := 10-own-2, 10-own-1, 10-own
	for _, user := range []int{fits, spent, full} {
		_, err := p.Send(context.Background(), standardURL, Job{Body: strconv.Itoa(user), Type: "t", Attributes: attributes(user)})
		require.NoError(t, err)
	}
	sent := fake.sent()
	require.Len(t, sent, 3)
	for i, user := range []int{fits, spent, full} {
		assert.Equal(t, header, aws.ToString(sent[i].system[AttributeAWSTraceHeader].StringValue), "%d user attributes", user)
		assert.LessOrEqual(t, len(sent[i].attributes), 10, "%d user attributes", user)
	}
	assert.Equal(t, "a=b", sent[0].attribute("tracestate"), "room for both trace attributes")
	assert.NotEmpty(t, sent[0].attribute("traceparent"))
	for _, m := range sent[1:] {
		assert.NotContains(t, m.attributes, "traceparent", "the trace attributes do not fit: neither is sent")
		assert.NotContains(t, m.attributes, "tracestate")
	}
	assert.Len(t, sent[2].attributes, 10)
}

func TestSendToFIFOUsesUniqueKeyAsDeduplicationID(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	_, err := p.Send(context.Background(), fifoURL, Job{Body: "x", GroupID: "g", UniqueKey: "order-1"})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), fifoURL, Job{Body: "y", GroupID: "g", UniqueKey: "order-2", DeduplicationID: "explicit"})
	require.NoError(t, err)
	sent := fake.sent()
	assert.Equal(t, "order-1", sent[0].dedup)
	assert.Equal(t, "explicit", sent[1].dedup)
}

func TestSendCountsSizeAsSQSDoes(t *testing.T) {
	fake := newFake()
	fake.maxSize = 100
	p := newProducer(t, fake, Config{})
	// body 62 + "job-type" (8) + "String" (6) + "abcdef" (6) + "job-id" (6) + "String"
	// (6) + "j-1234" (6) = 100: fits exactly.
	_, err := p.Send(context.Background(), standardURL, Job{ID: "j-1234", Type: "abcdef", Body: strings.Repeat("x", 62)})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), standardURL, Job{ID: "j-1234", Type: "abcdef", Body: strings.Repeat("x", 63)})
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, TooLargeError{QueueURL: standardURL, Size: 101, Limit: 100}, *tooLarge)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, "is 101 bytes (body plus attributes), above the queue's MaximumMessageSize of 100 bytes")
	assert.Len(t, fake.sent(), 1, "nothing sent for the oversized job")
}

type recordingStore struct {
	mu    sync.Mutex
	calls []int // sizes of the bodies offloaded
	body  string
}

func (s *recordingStore) Offload(ctx context.Context, queueURL string, body string, attrs map[string]types.MessageAttributeValue) (string, map[string]types.MessageAttributeValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, len(body))
	attrs["ExtendedPayloadSize"] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(body)))}
	return s.body, attrs, nil
}

func TestSendOffloadsAboveTheThreshold(t *testing.T) {
	fake := newFake()
	fake.maxSize = 1000
	store := &recordingStore{body: `["pointer"]`}
	// The threshold counts the attributes too: the job id's is 38 bytes (name, type, ULID).
	jobIDBytes := len(sqsworker.AttributeJobID) + len("String") + 26
	p := newProducer(t, fake, Config{PayloadStore: store, OffloadThreshold: 50 + jobIDBytes})
	_, err := p.Send(context.Background(), standardURL, Job{Body: strings.Repeat("x", 50)})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), standardURL, Job{Body: strings.Repeat("y", 51)})
	require.NoError(t, err)
	assert.Equal(t, []int{51}, store.calls, "only the job above the threshold is offloaded")
	sent := fake.sent()
	assert.Equal(t, strings.Repeat("x", 50), sent[0].body)
	assert.Equal(t, `["pointer"]`, sent[1].body)
	assert.Equal(t, "51", sent[1].attribute("ExtendedPayloadSize"))

	store.body = strings.Repeat("z", 1001)
	_, err = p.Send(context.Background(), standardURL, Job{Body: strings.Repeat("y", 60)})
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.True(t, tooLarge.Offloaded)
}

func TestLongDelayIsSentAsAHopWithItsDueTime(t *testing.T) {
	fake := newFake()
	now := time.UnixMilli(1_800_000_000_000)
	p := newProducer(t, fake, Config{Now: func() time.Time { return now }})
	_, err := p.Send(context.Background(), standardURL, Job{Body: "x", Delay: 40 * time.Minute})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), standardURL, Job{Body: "y", Delay: 15 * time.Minute})
	require.NoError(t, err)
	sent := fake.sent()
	assert.EqualValues(t, 900, sent[0].delay)
	assert.Equal(t, strconv.FormatInt(now.Add(40*time.Minute).UnixMilli(), 10), sent[0].attribute(sqsworker.AttributeDueAt))
	assert.Equal(t, "Number", aws.ToString(sent[0].attributes[sqsworker.AttributeDueAt].DataType))
	assert.EqualValues(t, 900, sent[1].delay)
	assert.NotContains(t, sent[1].attributes, sqsworker.AttributeDueAt, "15 minutes fit in DelaySeconds")
}

// TestHopSendsTheRestAtMostMaxHop: a hop re-sends the message to its queue, body,
// attributes (the due time among them) and group unchanged, with the rest of its delay
// but at most MaxHop, rounded up to whole seconds; a failed send is an error naming the
// message, an ordinary failure that keeps the original.
func TestHopSendsTheRestAtMostMaxHop(t *testing.T) {
	fake := newFake()
	now := time.UnixMilli(1_800_000_000_000)
	p := newProducer(t, fake, Config{Now: func() time.Time { return now }})
	message := &sqsworker.Message{ID: "m-0", Body: "job", QueueURL: standardURL, GroupID: "tenant", MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobType: {DataType: "String", StringValue: "t"},
		sqsworker.AttributeDueAt:   {DataType: "Number", StringValue: strconv.FormatInt(now.Add(25*time.Minute+300*time.Millisecond).UnixMilli(), 10)},
	}}

	require.NoError(t, p.Hop(context.Background(), message, 25*time.Minute+300*time.Millisecond))
	require.NoError(t, p.Hop(context.Background(), message, 10*time.Minute+300*time.Millisecond))
	sent := fake.sent()
	require.Len(t, sent, 2)
	assert.EqualValues(t, 900, sent[0].delay)
	assert.EqualValues(t, 601, sent[1].delay, "the rest, 10 min 0.3 s, rounded up")
	for _, hop := range sent {
		assert.Equal(t, "job", hop.body)
		assert.Equal(t, "t", hop.attribute(sqsworker.AttributeJobType))
		assert.Equal(t, message.MessageAttributes[sqsworker.AttributeDueAt].StringValue, hop.attribute(sqsworker.AttributeDueAt))
		assert.Equal(t, "tenant", hop.group)
	}

	fake.sendError = func(string) error { return errors.New("throttled") }
	err := p.Hop(context.Background(), message, time.Hour)
	assert.ErrorContains(t, err, "re-sending delayed message m-0")
	assert.Equal(t, sqsworker.OutcomeRetry, sqsworker.Classify(err).Kind, "a failed hop keeps the original")
}

// TestHopLogsOneInfoLine: each hop leaves exactly one info line naming the message, its
// queue, its due time, the hop's delay and the new message's id, and no other line (a
// due job and a refused due time do not reach Hop: see sqsworker's delay tests).
func TestHopLogsOneInfoLine(t *testing.T) {
	fake := newFake()
	now := time.UnixMilli(1_800_000_000_000)
	logs, logger := testenv.NewLogLines()
	p := newProducer(t, fake, Config{Logger: logger})
	due := now.Add(20 * time.Minute)
	message := &sqsworker.Message{ID: "m-0", Body: "job", QueueURL: standardURL, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeDueAt: {DataType: "Number", StringValue: strconv.FormatInt(due.UnixMilli(), 10)},
	}}
	require.NoError(t, p.Hop(context.Background(), message, 20*time.Minute))
	require.NoError(t, p.Hop(context.Background(), message, 5*time.Minute))

	all := logs.Records("")
	require.Len(t, all, 2, "one line per hop, none else: %v", all)
	sent := fake.sent()
	require.Len(t, sent, 2)
	for i, delay := range []string{"15m0s", "5m0s"} {
		record := all[i]
		assert.Equal(t, "INFO", record["level"])
		assert.Equal(t, "producer: delayed job re-sent", record["msg"])
		assert.Equal(t, "m-0", record["message_id"])
		assert.Equal(t, standardURL, record["queue"])
		assert.Equal(t, due.UTC().Format(time.RFC3339Nano), record["due_at"])
		assert.EqualValues(t, mustParseDuration(t, delay), record["delay"], "the hop's delay in nanoseconds")
		assert.Equal(t, fmt.Sprintf("m-%d", i+1), record["new_message_id"], "the fake's ids: m-1, m-2")
	}
}

func mustParseDuration(t *testing.T, text string) float64 {
	d, err := time.ParseDuration(text)
	require.NoError(t, err)
	return float64(d)
}

// TestSendRefusesADelayPastTheHorizon: a delay longer than Config.DueAtHorizon is
// refused at the send, naming both; one of exactly the horizon is sent.
func TestSendRefusesADelayPastTheHorizon(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{DueAtHorizon: 48 * time.Hour})
	_, err := p.Send(context.Background(), standardURL, Job{Body: "x", Delay: 48*time.Hour + time.Second})
	require.ErrorContains(t, err, "job delay 48h0m1s is longer than the due-time horizon of 48h0m0s")
	_, err = p.Send(context.Background(), standardURL, Job{Body: "x", Delay: 48 * time.Hour})
	require.NoError(t, err)
	_, err = newProducer(t, fake, Config{}).Send(context.Background(), standardURL, Job{Body: "x", Delay: sqsworker.DefaultDueAtHorizon + time.Millisecond})
	require.ErrorContains(t, err, "due-time horizon of 8760h0m0s")
	assert.Len(t, fake.sent(), 1)
}

func TestSendBatchPacksAndRetriesFailedEntriesAlone(t *testing.T) {
	fake := newFake()
	fake.entryFailure = func(body string) *types.BatchResultErrorEntry {
		switch body {
		case "job-3":
			return &types.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("try again")}
		case "job-4":
			return &types.BatchResultErrorEntry{Code: aws.String("InvalidParameterValue"), Message: aws.String("bad"), SenderFault: true}
		}
		return nil
	}
	p := newProducer(t, fake, Config{})
	jobs := make([]Job, 25)
	for i := range jobs {
		jobs[i] = Job{Body: fmt.Sprintf("job-%d", i)}
	}
	jobs[7] = Job{} // invalid
	results, err := p.SendBatch(context.Background(), standardURL, jobs)
	require.Len(t, results, 25)
	assert.Equal(t, 3, fake.batchCalls(), "24 valid jobs in batches of at most 10")
	assert.Len(t, fake.sends, 1, "the entry SQS failed is sent again alone")
	assert.Equal(t, "job-3", aws.ToString(fake.sends[0].MessageBody))
	assert.NotEmpty(t, results[3].MessageID)
	assert.NoError(t, results[3].Err)
	assert.ErrorContains(t, results[4].Err, "InvalidParameterValue")
	assert.ErrorContains(t, results[7].Err, "neither Payload nor Body")
	assert.ErrorContains(t, err, "job 4: ")
	assert.ErrorContains(t, err, "job 7: ")
	ids := map[string]bool{}
	for i, result := range results {
		if i != 4 && i != 7 {
			require.NoError(t, result.Err, i)
			ids[result.MessageID] = true
		}
	}
	assert.Len(t, ids, 23, "each job its own message id")
}

func TestSendBatchSplitsByBytes(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	big := strings.Repeat("x", 400*1024)
	_, err := p.SendBatch(context.Background(), standardURL, []Job{{Body: big}, {Body: big}, {Body: big}, {Body: "small"}})
	require.NoError(t, err)
	require.Equal(t, 2, fake.batchCalls(), "at most 1 MiB per call")
	assert.Len(t, fake.batches[0].Entries, 2)
	assert.Len(t, fake.batches[1].Entries, 2)
}

func TestBatcherMergesConcurrentSends(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	// The window is far longer than the sends take to start, so only full batches go out
	// before the last, partial one.
	batcher, err := p.NewBatcher(standardURL, BatcherConfig{Window: 500 * time.Millisecond})
	require.NoError(t, err)
	defer batcher.Close(context.Background())
	const n = 95
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = batcher.Send(context.Background(), Job{Body: strconv.Itoa(i)}) })
	}
	wg.Wait()
	assert.Equal(t, 10, fake.batchCalls())
	seen := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		assert.False(t, seen[ids[i]], "one id per caller")
		seen[ids[i]] = true
	}
	bodies := map[string]bool{}
	for _, m := range fake.sent() {
		bodies[m.body] = true
	}
	assert.Len(t, bodies, n)
}

func TestBatcherCloseSendsTheOpenBatch(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	batcher, err := p.NewBatcher(standardURL, BatcherConfig{Window: time.Hour})
	require.NoError(t, err)
	out, err := p.prepare(context.Background(), standardURL, Job{Body: "open"})
	require.NoError(t, err)
	r := &request{message: out.message, result: make(chan sendResult, 1)}
	batcher.requests <- r // taken by the batcher's goroutine: the batch is open
	require.NoError(t, batcher.Close(context.Background()))
	result := <-r.result
	require.NoError(t, result.err)
	assert.NotEmpty(t, result.id)
	assert.Equal(t, 1, fake.batchCalls())

	_, err = batcher.Send(context.Background(), Job{Body: "late"})
	assert.ErrorIs(t, err, ErrBatcherClosed)
	assert.NoError(t, batcher.Close(context.Background()), "Close twice")
}

func TestBatcherSendsAnOpenBatchAfterItsWindow(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	batcher, err := p.NewBatcher(standardURL, BatcherConfig{Window: 5 * time.Millisecond})
	require.NoError(t, err)
	defer batcher.Close(context.Background())
	id, err := batcher.Send(context.Background(), Job{Body: "alone"})
	require.NoError(t, err)
	assert.NotEmpty(t, id)
	assert.Equal(t, 1, fake.batchCalls())
}

func TestUniqueJobSentOnce(t *testing.T) {
	fake := newFake()
	store := newMemoryUnique()
	p := newProducer(t, fake, Config{Unique: store})
	var wg sync.WaitGroup
	ids := make([]string, 20)
	errs := make([]error, 20)
	for i := range 20 {
		wg.Go(func() {
			ids[i], errs[i] = p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "order-9"})
		})
	}
	wg.Wait()
	require.Len(t, fake.sent(), 1)
	first := ""
	for i := range 20 {
		if errs[i] == nil {
			require.Empty(t, first, "only one send succeeds")
			first = ids[i]
		}
	}
	for i := range 20 {
		if errs[i] != nil {
			var duplicate *DuplicateJobError
			require.ErrorAs(t, errs[i], &duplicate)
			assert.Equal(t, DuplicateJobError{Key: "order-9", MessageID: first}, *duplicate)
		}
	}
}

func TestUniqueKeyReleasedWhenTheSendFails(t *testing.T) {
	fake := newFake()
	fake.sendError = func(body string) error {
		if body == "fails" {
			return errors.New("network down")
		}
		return nil
	}
	p := newProducer(t, fake, Config{Unique: newMemoryUnique()})
	_, err := p.Send(context.Background(), standardURL, Job{Body: "fails", UniqueKey: "k"})
	require.ErrorContains(t, err, "network down")
	id, err := p.Send(context.Background(), standardURL, Job{Body: "works", UniqueKey: "k"})
	require.NoError(t, err)
	assert.NotEmpty(t, id)
}

func TestUniqueKeyPendingTooLong(t *testing.T) {
	store := newMemoryUnique()
	now := time.UnixMilli(1_800_000_000_000)
	_, _, _ = store.Reserve(context.Background(), "k", "crashed-producer", now, now.Add(time.Minute))
	p := newProducer(t, newFake(), Config{Unique: store, UniqueWait: 50 * time.Millisecond})
	_, err := p.Send(context.Background(), standardURL, Job{Body: "x", UniqueKey: "k"})
	var duplicate *DuplicateJobError
	require.ErrorAs(t, err, &duplicate)
	assert.True(t, duplicate.Pending)
}

func TestNewRejectsBadConfig(t *testing.T) {
	_, err := New(newFake(), Config{OffloadThreshold: -1, MaxHop: 16 * time.Minute, UniqueWait: -1})
	assert.ErrorContains(t, err, "OffloadThreshold is negative")
	assert.ErrorContains(t, err, "MaxHop 16m0s is outside")
	assert.ErrorContains(t, err, "UniqueWait")
	_, err = New(nil, Config{})
	assert.ErrorContains(t, err, "nil SQS client")
}

func waitFor(t *testing.T, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSendBatchSendsARepeatedUniqueKeyOnce(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{Unique: newMemoryUnique(), UniqueWait: time.Minute})
	start := time.Now()
	results, err := p.SendBatch(context.Background(), standardURL, []Job{
		{Body: "a", UniqueKey: "k"}, {Body: "b"}, {Body: "a again", UniqueKey: "k"},
	})
	assert.Less(t, time.Since(start), 10*time.Second, "the repeat does not wait for its own batch")
	require.Len(t, fake.sent(), 2)
	require.NoError(t, results[0].Err)
	var duplicate *DuplicateJobError
	require.ErrorAs(t, results[2].Err, &duplicate)
	assert.Equal(t, DuplicateJobError{Key: "k", MessageID: results[0].MessageID}, *duplicate)
	assert.ErrorContains(t, err, "job 2: ")
}

func TestSendFromAHandlerCarriesTheMessagesTraceContext(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{})
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("order", func(ctx context.Context, m *sqsworker.Message) error {
		_, err := p.Send(ctx, standardURL, Job{Type: "invoice", Body: "{}"}) // a follow-up job
		return err
	})
	require.NoError(t, mux.Handle(context.Background(), &sqsworker.Message{MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobType: {DataType: "String", StringValue: "order"},
		"traceparent":              {DataType: "String", StringValue: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}}))
	_, err := p.Send(context.Background(), standardURL, Job{Body: "outside a handler"})
	require.NoError(t, err)
	sent := fake.sent()
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", sent[0].attribute("traceparent"))
	assert.NotContains(t, sent[0].attributes, "tracestate")
	assert.NotContains(t, sent[1].attributes, "traceparent")
}

func TestTenantFillsTheGroupOfStandardQueuesOnly(t *testing.T) {
	fake := newFake()
	p := newProducer(t, fake, Config{Tenant: func(job Job) string { return job.Body }})
	for _, job := range []Job{{Body: "acme"}, {Body: "acme", GroupID: "own"}, {Body: "", Payload: 1}} {
		_, err := p.Send(context.Background(), standardURL, job)
		require.NoError(t, err)
	}
	_, err := p.Send(context.Background(), fifoURL, Job{Body: "acme", GroupID: "order-1"})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), fifoURL, Job{Body: "acme"})
	require.ErrorContains(t, err, "has no GroupID", "FIFO groups are the caller's ordering, never the tenant function's")
	_, err = p.Send(context.Background(), standardURL, Job{Body: strings.Repeat("t", 129)})
	require.ErrorIs(t, err, sqsinfo.ErrInvalidMessageGroupID)
	sent := fake.sent()
	require.Len(t, sent, 4)
	assert.Equal(t, []string{"acme", "own", "", "order-1"}, []string{sent[0].group, sent[1].group, sent[2].group, sent[3].group})
}
