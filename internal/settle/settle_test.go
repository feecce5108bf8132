package settle_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

var fixed = sqsworker.Backoff{Base: 4 * time.Second, Cap: time.Minute, Jitter: sqsworker.JitterNone}

func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	received := now.Add(-time.Second)
	message := &sqsworker.Message{ReceiveCount: 2}
	tests := []struct {
		name     string
		err      error
		message  *sqsworker.Message
		dlq      bool
		want     settle.Action
		wantSecs int32
	}{
		{name: "success", err: nil, dlq: true, want: settle.Action{Delete: true}},
		{name: "cancelled is deleted", err: sqsworker.Cancelled(errors.New("operator")), dlq: true, want: settle.Action{Delete: true}},
		{name: "retry uses the backoff of the receive count", err: errors.New("503"), dlq: true, want: settle.Action{Visibility: 8 * time.Second}, wantSecs: 8},
		{name: "retry-after", err: sqsworker.RetryAfter(1500*time.Millisecond, errors.New("429")), want: settle.Action{Visibility: 1500 * time.Millisecond}, wantSecs: 2},
		{name: "defer", err: sqsworker.Defer(time.Minute, "later"), want: settle.Action{Visibility: time.Minute}, wantSecs: 60},
		{name: "permanent with the send on", err: sqsworker.Permanent("Bad", errors.New("x")), dlq: true, want: settle.Action{DeadLetter: true, Delete: true, Visibility: 8 * time.Second}, wantSecs: 8},
		{name: "permanent with the send off", err: sqsworker.Permanent("Bad", errors.New("x")), dlq: false, want: settle.Action{Visibility: 8 * time.Second}, wantSecs: 8},
		{name: "clamped since the first receive", err: sqsworker.RetryAfter(12*time.Hour, errors.New("x")),
			message: &sqsworker.Message{ReceiveCount: 2, FirstReceivedAt: now.Add(-11 * time.Hour)},
			want:    settle.Action{Visibility: time.Hour - sqsx.VisibilitySafetyMargin}, wantSecs: 3570},
		{name: "clamped since this receive when the first receive is unknown", err: sqsworker.RetryAfter(12*time.Hour, errors.New("x")),
			message: &sqsworker.Message{ReceiveCount: 2}, want: settle.Action{Visibility: 12*time.Hour - time.Second - sqsx.VisibilitySafetyMargin}, wantSecs: 43169},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := message
			if tc.message != nil {
				m = tc.message
			}
			outcome := sqsworker.Classify(tc.err)
			got := settle.Plan(outcome, m, received, now, fixed, tc.dlq)
			tc.want.Outcome = outcome
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantSecs, got.Seconds())
		})
	}
}

type finisher struct {
	finished    []string
	rescheduled []settle.Action
}

func (f *finisher) Finish(_ context.Context, d settle.Delivery) {
	f.finished = append(f.finished, d.Message.ID)
}
func (f *finisher) Reschedule(_ context.Context, _ settle.Delivery, a settle.Action) {
	f.rescheduled = append(f.rescheduled, a)
}

type deadLetter struct {
	err             error
	maxReceiveCount int   // the queue's redrive policy; 0: none
	queueErr        error // the queue's description cannot be read
	sent            []sqsworker.Outcome
}

func (d *deadLetter) Queue(context.Context, *sqsworker.Message) (*sqsinfo.Queue, error) {
	if d.queueErr != nil {
		return nil, d.queueErr
	}
	queue := &sqsinfo.Queue{URL: "q", DeadLetterQueueURL: "q-dlq"}
	if d.maxReceiveCount > 0 {
		queue.RedrivePolicy = &sqsinfo.RedrivePolicy{MaxReceiveCount: d.maxReceiveCount}
	}
	return queue, nil
}

func (d *deadLetter) Send(_ context.Context, _ *sqsworker.Message, o sqsworker.Outcome) error {
	d.sent = append(d.sent, o)
	return d.err
}

type recorder struct{ kinds []sqsworker.EventKind }

func (r *recorder) Observe(_ context.Context, ev sqsworker.Event) { r.kinds = append(r.kinds, ev.Kind) }

func TestSettleCarriesOutEveryOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                      string
		err                       error
		sendErr                   error
		wantDone                  bool
		wantFinished, wantResched int
		wantSent                  int
		wantKinds                 []sqsworker.EventKind
		wantErrorHandler          int
	}{
		{name: "success", wantDone: true, wantFinished: 1, wantKinds: []sqsworker.EventKind{sqsworker.EventFinished}},
		{name: "retry", err: errors.New("x"), wantResched: 1, wantErrorHandler: 1, wantKinds: []sqsworker.EventKind{sqsworker.EventFinished}},
		{name: "defer is not a failure", err: sqsworker.Defer(time.Second, "r"), wantResched: 1, wantKinds: []sqsworker.EventKind{sqsworker.EventFinished}},
		{name: "cancelled: deleted, not retried, not dead-lettered", err: sqsworker.Cancelled(nil), wantDone: true, wantFinished: 1, wantKinds: []sqsworker.EventKind{sqsworker.EventFinished}},
		{name: "dead letter", err: sqsworker.Permanent("Bad", errors.New("x")), wantDone: true, wantFinished: 1, wantSent: 1, wantErrorHandler: 1,
			wantKinds: []sqsworker.EventKind{sqsworker.EventFinished, sqsworker.EventDeadLettered}},
		{name: "dead letter send fails", err: sqsworker.Permanent("Bad", errors.New("x")), sendErr: errors.New("throttled"), wantResched: 1, wantSent: 1, wantErrorHandler: 1,
			wantKinds: []sqsworker.EventKind{sqsworker.EventFinished, sqsworker.EventDeadLetterFailed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dlq := &deadLetter{err: tc.sendErr}
			observed := &recorder{}
			handled := 0
			s := settle.New(settle.Config{Host: "test", Backoff: fixed, DeadLetter: dlq, Observer: observed,
				ErrorHandler: func(context.Context, *sqsworker.Message, error) { handled++ }})
			f := &finisher{}
			d := settle.Delivery{Message: &sqsworker.Message{ID: "m", ReceiveCount: 1}, ReceivedAt: time.Now()}
			done := s.Settle(context.Background(), d, tc.err, f)
			assert.Equal(t, tc.wantDone, done)
			assert.Len(t, f.finished, tc.wantFinished)
			assert.Len(t, f.rescheduled, tc.wantResched)
			assert.Len(t, dlq.sent, tc.wantSent)
			assert.Equal(t, tc.wantKinds, observed.kinds)
			assert.Equal(t, tc.wantErrorHandler, handled)
		})
	}
}

func TestCallRecoversAPanicWithItsLocation(t *testing.T) {
	t.Parallel()
	err := settle.Call(context.Background(), sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		panic("boom")
	}), &sqsworker.Message{})
	panicErr, ok := errors.AsType[*sqsworker.PanicError](err)
	require.True(t, ok)
	assert.Equal(t, "boom", panicErr.Value)
	assert.Contains(t, panicErr.Location, "settle_test.go:")
	assert.Equal(t, sqsworker.OutcomeRetry, sqsworker.Classify(err).Kind)
}

// TestExhaust: an attempt that would make the message visible again becomes a
// dead-letter send with reason RetriesExhausted once the receive count reaches the
// redrive policy's maxReceiveCount, keeping the planned visibility for a failed send;
// below it, without a policy, with the send off, or for other outcomes, nothing changes.
func TestExhaust(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	handlerErr := errors.New("downstream 503")
	tests := []struct {
		name            string
		err             error
		receiveCount    int
		maxReceiveCount int
		send            bool
		exhausted       bool
	}{
		{name: "retry at maxReceiveCount", err: handlerErr, receiveCount: 3, maxReceiveCount: 3, send: true, exhausted: true},
		{name: "retry past maxReceiveCount", err: handlerErr, receiveCount: 4, maxReceiveCount: 3, send: true, exhausted: true},
		{name: "retry-after at maxReceiveCount", err: sqsworker.RetryAfter(time.Minute, handlerErr), receiveCount: 3, maxReceiveCount: 3, send: true, exhausted: true},
		{name: "defer at maxReceiveCount", err: sqsworker.Defer(time.Minute, "NotYet"), receiveCount: 3, maxReceiveCount: 3, send: true, exhausted: true},
		{name: "panic at maxReceiveCount", err: &sqsworker.PanicError{Value: "boom"}, receiveCount: 1, maxReceiveCount: 1, send: true, exhausted: true},
		{name: "retry below maxReceiveCount", err: handlerErr, receiveCount: 2, maxReceiveCount: 3, send: true},
		{name: "no redrive policy", err: handlerErr, receiveCount: 30, send: true},
		{name: "send disabled: the redrive policy moves it", err: handlerErr, receiveCount: 3, maxReceiveCount: 3},
		{name: "success", receiveCount: 3, maxReceiveCount: 3, send: true},
		{name: "permanent keeps its own reason", err: sqsworker.Permanent("Bad", handlerErr), receiveCount: 3, maxReceiveCount: 3, send: true},
		{name: "job type's MaxAttempts reached", err: limitedFailure(t, 2, handlerErr), receiveCount: 2, maxReceiveCount: 5, send: true, exhausted: true},
		{name: "job type's MaxAttempts reached on a RetryAfter", err: limitedFailure(t, 2, sqsworker.RetryAfter(time.Minute, handlerErr)), receiveCount: 2, maxReceiveCount: 5, send: true, exhausted: true},
		{name: "job type's MaxAttempts without a redrive policy", err: limitedFailure(t, 2, handlerErr), receiveCount: 3, send: true, exhausted: true},
		{name: "below the job type's MaxAttempts", err: limitedFailure(t, 3, handlerErr), receiveCount: 2, maxReceiveCount: 5, send: true},
		{name: "job type's MaxAttempts, send disabled", err: limitedFailure(t, 2, handlerErr), receiveCount: 2, maxReceiveCount: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			message := &sqsworker.Message{ID: "m", ReceiveCount: tc.receiveCount}
			outcome := sqsworker.Classify(tc.err)
			planned := settle.Plan(outcome, message, now, now, fixed, tc.send)
			got := settle.Exhaust(planned, message, tc.maxReceiveCount, tc.send)
			if !tc.exhausted {
				assert.Equal(t, planned, got)
				return
			}
			want := planned
			want.DeadLetter, want.Delete, want.Exhausted = true, true, true
			assert.Equal(t, want, got)
			assert.Equal(t, sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: sqsworker.ReasonRetriesExhausted, Err: outcome.Err}, got.DeadLetterOutcome())
		})
	}
}

// TestSettleDeadLettersTheLastAttempt: the failed attempt at maxReceiveCount is sent to
// the dead-letter queue with reason RetriesExhausted and the handler's error, then
// finished; when the send fails, or the queue's description cannot be read, it is
// rescheduled as planned, and the redrive policy moves it.
func TestSettleDeadLettersTheLastAttempt(t *testing.T) {
	t.Parallel()
	handlerErr := errors.New("downstream 503")
	tests := []struct {
		name      string
		dlq       *deadLetter
		wantDone  bool
		wantSent  []sqsworker.Outcome
		wantKinds []sqsworker.EventKind
	}{
		{name: "sent", dlq: &deadLetter{maxReceiveCount: 3}, wantDone: true,
			wantSent:  []sqsworker.Outcome{{Kind: sqsworker.OutcomeDeadLetter, Reason: sqsworker.ReasonRetriesExhausted, Err: handlerErr}},
			wantKinds: []sqsworker.EventKind{sqsworker.EventFinished, sqsworker.EventDeadLettered}},
		{name: "send refused", dlq: &deadLetter{maxReceiveCount: 3, err: errors.New("AccessDenied")},
			wantSent:  []sqsworker.Outcome{{Kind: sqsworker.OutcomeDeadLetter, Reason: sqsworker.ReasonRetriesExhausted, Err: handlerErr}},
			wantKinds: []sqsworker.EventKind{sqsworker.EventFinished, sqsworker.EventDeadLetterFailed}},
		{name: "queue unreadable", dlq: &deadLetter{queueErr: errors.New("AccessDenied")},
			wantKinds: []sqsworker.EventKind{sqsworker.EventFinished}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			observed := &recorder{}
			s := settle.New(settle.Config{Host: "test", Backoff: fixed, DeadLetter: tc.dlq, Observer: observed})
			f := &finisher{}
			d := settle.Delivery{Message: &sqsworker.Message{ID: "m", ReceiveCount: 3}, ReceivedAt: time.Now()}
			assert.Equal(t, tc.wantDone, s.Settle(context.Background(), d, handlerErr, f))
			assert.Equal(t, tc.wantSent, tc.dlq.sent)
			assert.Equal(t, tc.wantKinds, observed.kinds)
			if tc.wantDone {
				assert.Equal(t, []string{"m"}, f.finished)
				return
			}
			require.Len(t, f.rescheduled, 1)
			assert.Equal(t, 16*time.Second, f.rescheduled[0].Visibility, "the backoff of the third receive")
		})
	}
}

// limitedFailure returns the error a ServeMux returns for a job type registered with
// JobMaxAttempts(limit) whose handler failed with err.
func limitedFailure(t *testing.T, limit int, err error) error {
	t.Helper()
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("job", func(context.Context, *sqsworker.Message) error { return err }, sqsworker.JobMaxAttempts(limit))
	got := mux.Handle(context.Background(), &sqsworker.Message{ReceiveCount: 1, MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeJobType: {DataType: "String", StringValue: "job"},
	}})
	if n, ok := sqsworker.AttemptLimit(got); !ok || n != limit {
		t.Fatalf("AttemptLimit(%v) = %d, %v; want %d", got, n, ok, limit)
	}
	return got
}

// TestWarnsOnceWhenTheAttemptLimitIsNotBelowMaxReceiveCount: a failure of a job type
// whose MaxAttempts (5) is not below the queue's maxReceiveCount (5) logs one warning
// with the numbers, however many such failures follow; a limit below it logs none.
func TestWarnsOnceWhenTheAttemptLimitIsNotBelowMaxReceiveCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit, want int
	}{{5, 1}, {4, 0}} {
		var logs bytes.Buffer
		s := settle.New(settle.Config{Host: "lambda", Backoff: fixed, DeadLetter: &deadLetter{maxReceiveCount: 5}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for range 3 {
			d := settle.Delivery{Message: &sqsworker.Message{ID: "m", ReceiveCount: 1}, ReceivedAt: time.Now()}
			s.Settle(context.Background(), d, limitedFailure(t, tc.limit, errors.New("503")), &finisher{})
		}
		got := strings.Count(logs.String(), "MaxAttempts is not below the queue's maxReceiveCount")
		if got != tc.want || tc.want == 1 && !strings.Contains(logs.String(), "max_attempts=5 max_receive_count=5") {
			t.Errorf("limit %d: %d warnings, want %d:\n%s", tc.limit, got, tc.want, logs.String())
		}
	}
}
