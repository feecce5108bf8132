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

type welcome struct {
	To   string `json:"to"`
	Name string `json:"name"`
}

func typed(jobType, body string) *Message {
	message := &Message{ID: "m-1", Body: body, ReceiveCount: 1}
	if jobType != "" {
		message.MessageAttributes = map[string]MessageAttribute{AttributeJobType: {DataType: "String", StringValue: jobType}}
	}
	return message
}

func TestServeMuxRoutesByJobTypeAttribute(t *testing.T) {
	mux := NewServeMux()
	var got []string
	mux.RegisterFunc("a", func(ctx context.Context, m *Message) error { got = append(got, "a:"+m.Body); return nil })
	mux.RegisterFunc("b", func(ctx context.Context, m *Message) error { got = append(got, "b:"+m.Body); return nil })
	require.NoError(t, mux.Handle(context.Background(), typed("b", "1")))
	require.NoError(t, mux.Handle(context.Background(), typed("a", "2")))
	assert.Equal(t, []string{"b:1", "a:2"}, got)
	assert.Equal(t, []string{"a", "b"}, mux.JobTypes())
}

func TestServeMuxUnknownAndMissingTypesFailPermanently(t *testing.T) {
	mux := NewServeMux()
	mux.RegisterFunc("known", func(context.Context, *Message) error { return nil })
	for name, tc := range map[string]struct {
		message *Message
		want    string
	}{
		"unknown": {typed("nope", "{}"), `no handler for job type "nope" (registered: known)`},
		"missing": {typed("", "{}"), `message has no "job-type" attribute`},
	} {
		t.Run(name, func(t *testing.T) {
			outcome := Classify(mux.Handle(context.Background(), tc.message))
			assert.Equal(t, OutcomeDeadLetter, outcome.Kind)
			assert.Equal(t, "UnknownJobType", outcome.Reason)
			assert.Contains(t, outcome.Err.Error(), tc.want)
		})
	}
}

func TestServeMuxRoutesByJSONField(t *testing.T) {
	mux := NewServeMux(RouteByJSONField("type"))
	var got []welcome
	RegisterJSON(mux, "welcome", func(ctx context.Context, job welcome) error { got = append(got, job); return nil })
	require.NoError(t, mux.Handle(context.Background(), typed("", `{"type":"welcome","to":"a@example.com"}`)))
	// The attribute wins over the field, and a body without the field decodes as it is.
	require.NoError(t, mux.Handle(context.Background(), typed("welcome", `{"to":"b@example.com"}`)))
	assert.Equal(t, []welcome{{To: "a@example.com"}, {To: "b@example.com"}}, got)

	for body, want := range map[string]string{
		`{"to":"x"}`:     `its body no "type" field`,
		`not json`:       `its body is not a JSON object`,
		`{"type":7}`:     `"type" field is not a non-empty string`,
		`{"type":"new"}`: `no handler for job type "new"`,
	} {
		outcome := Classify(mux.Handle(context.Background(), typed("", body)))
		assert.Equal(t, "UnknownJobType", outcome.Reason, body)
		assert.Contains(t, outcome.Err.Error(), want, body)
	}
}

func TestRegisterJSONDecodesStrictly(t *testing.T) {
	mux := NewServeMux()
	var got welcome
	RegisterJSON(mux, "welcome", func(ctx context.Context, job welcome) error { got = job; return nil })
	require.NoError(t, mux.Handle(context.Background(), typed("welcome", ` {"to":"a@example.com","name":"A"} `)))
	assert.Equal(t, welcome{To: "a@example.com", Name: "A"}, got)

	for body, want := range map[string]string{
		`{"to":"a","extra":1}`:  `unknown field "extra"`,
		`{"to":"a"}{"to":"b"}`:  "trailing data",
		`{"to":"a"}]`:           "trailing data",
		`{"to":5}`:              "cannot unmarshal number",
		`{"to":"a"`:             "unexpected EOF",
		``:                      "empty body",
		`null`:                  "JSON null",
		`["to"]`:                "cannot unmarshal array",
		`{"type":"welcome"}`:    `unknown field "type"`, // no field routing on this mux
		"{\"to\":\"a\"}\n\t  x": "trailing data",
	} {
		outcome := Classify(mux.Handle(context.Background(), typed("welcome", body)))
		assert.Equal(t, OutcomeDeadLetter, outcome.Kind, body)
		assert.Equal(t, "MalformedBody", outcome.Reason, body)
		assert.Contains(t, outcome.Err.Error(), want, body)
	}
}

func TestJobTimeoutCancelsTheHandlersContext(t *testing.T) {
	mux := NewServeMux()
	mux.RegisterFunc("slow", func(ctx context.Context, m *Message) error {
		<-ctx.Done()
		return ctx.Err()
	}, JobTimeout(10*time.Millisecond))
	err := mux.Handle(context.Background(), typed("slow", ""))
	require.ErrorIs(t, err, ErrJobTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, OutcomeRetry, Classify(err).Kind)
}

func TestJobBackoffBecomesRetryAfter(t *testing.T) {
	backoff := Backoff{Base: time.Second, Cap: time.Hour, Jitter: JitterNone}
	mux := NewServeMux()
	mux.RegisterFunc("flaky", func(context.Context, *Message) error { return errors.New("503") }, JobBackoff(backoff))
	mux.RegisterFunc("panics", func(context.Context, *Message) error { panic("boom") }, JobBackoff(backoff))
	mux.RegisterFunc("gone", func(context.Context, *Message) error { return Permanent("HTTP410", nil) }, JobBackoff(backoff))
	mux.RegisterFunc("plain", func(context.Context, *Message) error { return errors.New("503") })

	message := typed("flaky", "")
	message.ReceiveCount = 4
	outcome := Classify(mux.Handle(context.Background(), message))
	assert.Equal(t, OutcomeRetryAfter, outcome.Kind)
	assert.Equal(t, 8*time.Second, outcome.Delay) // 1 s * 2^(4-1)
	assert.ErrorContains(t, outcome.Err, "503")

	message = typed("panics", "")
	assert.PanicsWithValue(t, "boom", func() { _ = mux.Handle(context.Background(), message) }, "the host recovers panics, in one place")

	assert.Equal(t, OutcomeDeadLetter, Classify(mux.Handle(context.Background(), typed("gone", ""))).Kind)
	assert.Equal(t, OutcomeRetry, Classify(mux.Handle(context.Background(), typed("plain", ""))).Kind)
}

// TestJobRetryDelaysTable: attempt n fails into a RetryAfter of the table's entry n, the
// last entry for every later attempt.
func TestJobRetryDelaysTable(t *testing.T) {
	mux := NewServeMux()
	mux.RegisterFunc("flaky", func(context.Context, *Message) error { return errors.New("503") }, JobRetryDelays(time.Second, 10*time.Second, time.Minute))
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 10 * time.Second, 3: time.Minute, 9: time.Minute} {
		message := typed("flaky", "")
		message.ReceiveCount = attempt
		outcome := Classify(mux.Handle(context.Background(), message))
		assert.Equal(t, OutcomeRetryAfter, outcome.Kind, "attempt %d", attempt)
		assert.Equal(t, want, outcome.Delay, "attempt %d", attempt)
	}
	assert.Panics(t, func() { JobRetryDelays() })
	assert.Panics(t, func() { JobRetryDelays(time.Second, -time.Second) })
}

// TestJobMaxAttemptsMarksFailures: every failure of a limited type that would retry
// carries the limit (AttemptLimit); successes, deferrals and permanent failures do not,
// nor do other types; the last attempt gets no retry delay added; MaxAttempts lists the
// limits.
func TestJobMaxAttemptsMarksFailures(t *testing.T) {
	var result error
	mux := NewServeMux()
	mux.RegisterFunc("limited", func(context.Context, *Message) error { return result }, JobMaxAttempts(3), JobRetryDelays(time.Second))
	mux.RegisterFunc("plain", func(context.Context, *Message) error { return errors.New("503") })
	assert.Equal(t, map[string]int{"limited": 3}, mux.MaxAttempts())

	for _, tc := range []struct {
		name    string
		result  error
		limited bool
	}{
		{"error", errors.New("503"), true},
		{"retry-after", RetryAfter(time.Minute, errors.New("429")), true},
		{"success", nil, false},
		{"deferral", Defer(time.Minute, "NotYet"), false},
		{"permanent", Permanent("Bad", errors.New("400")), false},
	} {
		result = tc.result
		err := mux.Handle(context.Background(), typed("limited", ""))
		limit, ok := AttemptLimit(err)
		assert.Equal(t, tc.limited, ok, tc.name)
		if tc.limited {
			assert.Equal(t, 3, limit, tc.name)
		}
	}
	_, ok := AttemptLimit(mux.Handle(context.Background(), typed("plain", "")))
	assert.False(t, ok, "a type without a limit")

	result = errors.New("503")
	last := typed("limited", "")
	last.ReceiveCount = 3
	outcome := Classify(mux.Handle(context.Background(), last))
	assert.Equal(t, OutcomeRetry, outcome.Kind, "the last attempt: no retry delay added")
	assert.Equal(t, "503", outcome.Err.Error())
	assert.Panics(t, func() { JobMaxAttempts(0) })
	assert.Nil(t, NewServeMux().MaxAttempts())
}

func TestJobMiddlewareWrapsOnlyItsType(t *testing.T) {
	var calls []string
	tag := func(name string) Middleware {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, m *Message) error {
				calls = append(calls, name)
				return next.Handle(ctx, m)
			})
		}
	}
	mux := NewServeMux()
	mux.RegisterFunc("a", func(ctx context.Context, m *Message) error {
		got, ok := MessageFromContext(ctx)
		require.True(t, ok)
		assert.Same(t, m, got)
		calls = append(calls, "handler a")
		return nil
	}, JobMiddleware(tag("outer"), tag("inner")))
	mux.RegisterFunc("b", func(context.Context, *Message) error { calls = append(calls, "handler b"); return nil })
	require.NoError(t, mux.Handle(context.Background(), typed("a", "")))
	require.NoError(t, mux.Handle(context.Background(), typed("b", "")))
	assert.Equal(t, []string{"outer", "inner", "handler a", "handler b"}, calls)
	_, ok := MessageFromContext(context.Background())
	assert.False(t, ok)
}

func TestServeMuxDefersAJobThatIsNotDue(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	mux := NewServeMux(muxClock(func() time.Time { return now }))
	handled := 0
	mux.RegisterFunc("later", func(context.Context, *Message) error { handled++; return nil })
	message := typed("later", "")
	message.MessageAttributes[AttributeDueAt] = MessageAttribute{DataType: "Number", StringValue: strconv.FormatInt(now.Add(90*time.Second).UnixMilli(), 10)}
	outcome := Classify(mux.Handle(context.Background(), message))
	assert.Equal(t, OutcomeDefer, outcome.Kind)
	assert.Equal(t, 90*time.Second, outcome.Delay)
	assert.Equal(t, "NotDue", outcome.Reason)
	assert.Zero(t, handled)

	now = now.Add(90 * time.Second)
	require.NoError(t, mux.Handle(context.Background(), message))
	assert.Equal(t, 1, handled)
}

// TestServeMuxRefusesFarAndMalformedDueTimes: a due time past the horizon, and a due-at
// attribute that is no positive integer of milliseconds, fail permanently with their
// reason (dead-lettered after one receive) instead of being deferred or run at once.
// Before, the first was deferred for ever (12 hours at a time) and the second was run
// at once as if it carried no due time.
func TestServeMuxRefusesFarAndMalformedDueTimes(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	handled := 0
	newMux := func(options ...MuxOption) *ServeMux {
		mux := NewServeMux(append([]MuxOption{muxClock(func() time.Time { return now })}, options...)...)
		mux.RegisterFunc("later", func(context.Context, *Message) error { handled++; return nil })
		return mux
	}
	dueAt := func(dataType, value string) *Message {
		message := typed("later", "")
		message.MessageAttributes[AttributeDueAt] = MessageAttribute{DataType: dataType, StringValue: value}
		return message
	}
	millis := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	cases := []struct {
		name    string
		mux     *ServeMux
		message *Message
		reason  string
		text    string
	}{
		{"two years ahead", newMux(), dueAt("Number", millis(now.Add(2*DefaultDueAtHorizon))), ReasonDueAtTooFar, "further than the due-time horizon of 8760h0m0s"},
		{"microseconds", newMux(), dueAt("Number", strconv.FormatInt(now.UnixMicro(), 10)), ReasonDueAtTooFar, "due-time horizon"},
		{"past a horizon of one hour", newMux(MuxDueAtHorizon(time.Hour)), dueAt("Number", millis(now.Add(time.Hour+time.Second))), ReasonDueAtTooFar, "horizon of 1h0m0s"},
		{"not a number", newMux(), dueAt("String", "tomorrow"), ReasonMalformedDueAt, `"tomorrow" (String)`},
		{"zero", newMux(), dueAt("Number", "0"), ReasonMalformedDueAt, "not a positive integer"},
		{"a fraction", newMux(), dueAt("Number", "1800000000000.5"), ReasonMalformedDueAt, "not a positive integer"},
		{"binary", newMux(), dueAt("Binary", ""), ReasonMalformedDueAt, "(Binary)"},
	}
	for _, c := range cases {
		err := c.mux.Handle(context.Background(), c.message)
		outcome := Classify(err)
		assert.Equal(t, OutcomeDeadLetter, outcome.Kind, c.name)
		assert.Equal(t, c.reason, outcome.Reason, c.name)
		assert.ErrorContains(t, err, c.text, c.name)
	}
	assert.Zero(t, handled)

	// At the horizon exactly the job waits; a due time in the past runs at once.
	outcome := Classify(newMux(MuxDueAtHorizon(time.Hour)).Handle(context.Background(), dueAt("Number", millis(now.Add(time.Hour)))))
	assert.Equal(t, OutcomeDefer, outcome.Kind)
	assert.Equal(t, time.Hour, outcome.Delay)
	require.NoError(t, newMux().Handle(context.Background(), dueAt("Number", millis(now.Add(-time.Hour)))))
	assert.Equal(t, 1, handled)
}

func TestServeMuxRegisterPanicsOnProgrammingErrors(t *testing.T) {
	mux := NewServeMux()
	mux.RegisterFunc("a", func(context.Context, *Message) error { return nil })
	assert.PanicsWithValue(t, `sqsworker: job type "a" registered twice`, func() {
		mux.RegisterFunc("a", func(context.Context, *Message) error { return nil })
	})
	assert.Panics(t, func() { mux.Register("", HandlerFunc(nil)) })
	assert.Panics(t, func() { mux.Register("b", nil) })
}

// muxClock sets the clock the mux compares due times with (time.Now outside tests).
func muxClock(now func() time.Time) MuxOption {
	return func(mux *ServeMux) { mux.now = now }
}
