package sqsworker

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hopRecorder is a Hopper that records each hop's message and remaining delay.
type hopRecorder struct {
	hops []time.Duration
	ids  []string
	err  error
}

func (h *hopRecorder) Hop(_ context.Context, message *Message, remaining time.Duration) error {
	h.hops = append(h.hops, remaining)
	h.ids = append(h.ids, message.ID)
	return h.err
}

func dueAtMessage(queueURL string, due time.Time) *Message {
	return &Message{ID: "m-0", Body: "job", QueueURL: queueURL, ReceiveCount: 1, MessageAttributes: map[string]MessageAttribute{
		AttributeJobType: {DataType: "String", StringValue: "t"},
		AttributeDueAt:   {DataType: "Number", StringValue: strconv.FormatInt(due.UnixMilli(), 10)},
	}}
}

// TestDelayMiddlewareHopsUntilDue: a job not due yet is never handed over; each receive
// hops it with the whole rest of its delay (the Hopper caps one hop); a due job is handed
// on without the due-at attribute, the host's message unchanged; a failed hop is the
// Hopper's error, an ordinary failure that keeps the original.
func TestDelayMiddlewareHopsUntilDue(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	hopper := &hopRecorder{}
	var handled []*Message
	handler := DelayMiddleware(hopper, DelayClock(func() time.Time { return now }))(HandlerFunc(func(_ context.Context, m *Message) error {
		handled = append(handled, m)
		return nil
	}))
	message := dueAtMessage("https://sqs.us-east-1.amazonaws.com/1/jobs", now.Add(25*time.Minute+300*time.Millisecond))

	require.NoError(t, handler.Handle(context.Background(), message))
	now = now.Add(15 * time.Minute)
	require.NoError(t, handler.Handle(context.Background(), message))
	assert.Empty(t, handled, "never handed over before it is due")
	assert.Equal(t, []time.Duration{25*time.Minute + 300*time.Millisecond, 10*time.Minute + 300*time.Millisecond}, hopper.hops)
	assert.Equal(t, []string{"m-0", "m-0"}, hopper.ids)

	now = now.Add(10*time.Minute + 300*time.Millisecond)
	require.NoError(t, handler.Handle(context.Background(), message))
	require.Len(t, handled, 1)
	assert.NotContains(t, handled[0].MessageAttributes, AttributeDueAt)
	assert.Equal(t, "t", handled[0].JobType())
	assert.Contains(t, message.MessageAttributes, AttributeDueAt, "the host's message is not changed")
	assert.Len(t, hopper.hops, 2, "a due job does not hop")

	hopper.err = errors.New("producer: re-sending delayed message m-0: throttled")
	message.MessageAttributes[AttributeDueAt] = MessageAttribute{DataType: "Number", StringValue: strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10)}
	err := handler.Handle(context.Background(), message)
	assert.ErrorContains(t, err, "re-sending delayed message m-0")
	assert.Equal(t, OutcomeRetry, Classify(err).Kind, "a failed hop keeps the original")
}

// TestDelayMiddlewareDefersOnFIFOAndRefusesFarOrMalformedDueTimes: on a FIFO queue a job
// not due is deferred (reason NotDue) instead of hopping; a due time past the horizon
// (DelayDueAtHorizon) or a malformed one fails permanently with its reason and no hop;
// a message without a due time passes through untouched.
func TestDelayMiddlewareDefersOnFIFOAndRefusesFarOrMalformedDueTimes(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	hopper := &hopRecorder{}
	handled := 0
	handler := DelayMiddleware(hopper, DelayClock(func() time.Time { return now }), DelayDueAtHorizon(48*time.Hour))(HandlerFunc(func(context.Context, *Message) error {
		handled++
		return nil
	}))

	outcome := Classify(handler.Handle(context.Background(), dueAtMessage("https://sqs.us-east-1.amazonaws.com/1/jobs.fifo", now.Add(40*time.Minute))))
	assert.Equal(t, OutcomeDefer, outcome.Kind)
	assert.Equal(t, ReasonNotDue, outcome.Reason)
	assert.Equal(t, 40*time.Minute, outcome.Delay)

	outcome = Classify(handler.Handle(context.Background(), dueAtMessage("https://sqs.us-east-1.amazonaws.com/1/jobs", now.Add(49*time.Hour))))
	assert.Equal(t, OutcomeDeadLetter, outcome.Kind)
	assert.Equal(t, ReasonDueAtTooFar, outcome.Reason)
	assert.ErrorContains(t, outcome.Err, "further than the due-time horizon of 48h0m0s")

	malformed := dueAtMessage("https://sqs.us-east-1.amazonaws.com/1/jobs", now)
	malformed.MessageAttributes[AttributeDueAt] = MessageAttribute{DataType: "String", StringValue: "soon"}
	outcome = Classify(handler.Handle(context.Background(), malformed))
	assert.Equal(t, OutcomeDeadLetter, outcome.Kind)
	assert.Equal(t, ReasonMalformedDueAt, outcome.Reason)

	plain := &Message{ID: "m-1", QueueURL: "https://sqs.us-east-1.amazonaws.com/1/jobs"}
	require.NoError(t, handler.Handle(context.Background(), plain))
	assert.Equal(t, 1, handled)
	assert.Empty(t, hopper.hops, "no hop")
	assert.Panics(t, func() { DelayMiddleware(nil) })
}
