package sqsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/syncrand"
)

// ErrJobTimeout is the cause of a handler's context cancelled by its job type's
// [JobTimeout], and is wrapped into the error such a handler returns.
var ErrJobTimeout = errors.New("sqsworker: job type timeout")

// ServeMux is a [Handler] that routes each message to the handler registered for its job
// type, read from the message attribute [AttributeJobType] (or, with [RouteByJSONField],
// from a field of the JSON body). Both hosts run it like any other handler.
//
// A message whose type is missing or has no handler fails permanently with reason
// "UnknownJobType", naming the type: the host sends it to the dead-letter queue after
// that one receive. A message that carries a due time ([AttributeDueAt]) in the future
// is deferred until then with reason [ReasonNotDue] (a safety net for a worker without
// [DelayMiddleware], which re-sends such jobs without counting receives); one
// due further ahead than the horizon ([MuxDueAtHorizon], a year by default) or with a
// malformed due time fails permanently ([ReasonDueAtTooFar], [ReasonMalformedDueAt]),
// as [Message.DueIn] decides. A deferral keeps the message: it must be due within the
// queue's retention period, and each deferral (at most 12 hours, SQS's visibility
// limit) is a receive that counts toward the redrive policy's maxReceiveCount.
//
// Register every type before the host starts; registering is safe while messages are
// being served, but a message of a type not registered yet is dead-lettered.
type ServeMux struct {
	typeField string
	now       func() time.Time
	horizon   time.Duration

	mu     sync.RWMutex
	routes map[string]*route
}

// MuxOption configures a [ServeMux] in [NewServeMux].
type MuxOption func(*ServeMux)

// RouteByJSONField makes the mux read the job type of a message without the
// [AttributeJobType] attribute from the top-level string field name of its JSON body
// (for producers that cannot set message attributes, such as an EventBridge Scheduler
// target's fixed input). The attribute wins when both are present. Handlers registered
// with [RegisterJSON] on such a mux decode bodies with or without that field.
func RouteByJSONField(name string) MuxOption {
	return func(mux *ServeMux) { mux.typeField = name }
}

// MuxDueAtHorizon sets how far ahead a message's due time may lie before the mux fails
// it permanently with reason [ReasonDueAtTooFar]; if zero or less, [DefaultDueAtHorizon]
// (365 days).
func MuxDueAtHorizon(d time.Duration) MuxOption {
	return func(mux *ServeMux) { mux.horizon = d }
}

// NewServeMux returns an empty mux.
func NewServeMux(options ...MuxOption) *ServeMux {
	mux := &ServeMux{now: time.Now, routes: map[string]*route{}}
	for _, option := range options {
		option(mux)
	}
	return mux
}

// JobOption sets a per-type setting in [ServeMux.Register].
type JobOption func(*route)

// JobTimeout bounds each handler call of the job type: after d its context is
// cancelled with cause [ErrJobTimeout], and an error it then returns wraps
// ErrJobTimeout (and is retried). The host's own hard timeout still applies; a d longer
// than it has no effect. A handler that ignores its context is stopped by the host's
// hard timeout, never by the mux (the host keeps its concurrency slot until it returns).
func JobTimeout(d time.Duration) JobOption {
	return func(r *route) { r.timeout = d }
}

// JobBackoff replaces the host's retry policy for the job type: an ordinary failure (an
// error that is not permanent, deferred or a RetryAfter) becomes [RetryAfter] with
// backoff.Delay([Message.Attempt]), which both hosts carry out through the visibility
// timeout, clamped to SQS's 12-hour limit. The outcome's reason is then "RetryAfter"
// instead of "HandlerError". A panic is recovered by the host, in one place, and retried
// with the host's backoff. It panics when backoff.Validate reports a problem.
func JobBackoff(backoff Backoff) JobOption {
	if err := backoff.Validate(); err != nil {
		panic(fmt.Sprintf("sqsworker: JobBackoff: %v", err))
	}
	backoff.Random = syncrand.Serialize(backoff.Random) // handlers of the type run concurrently
	return func(r *route) { r.delay = backoff.Delay }
}

// JobRetryDelays replaces the host's retry policy for the job type with a table: after
// failed attempt n (see [Message.Attempt]) the message is retried after delays[n-1], and
// after the last entry for every later attempt; as [JobBackoff] does, an ordinary
// failure becomes [RetryAfter] with that delay, clamped by the hosts to SQS's 12-hour
// visibility limit. It panics when delays is empty or holds a negative delay.
func JobRetryDelays(delays ...time.Duration) JobOption {
	if len(delays) == 0 {
		panic("sqsworker: JobRetryDelays without a delay")
	}
	for i, d := range delays {
		if d < 0 {
			panic(fmt.Sprintf("sqsworker: JobRetryDelays: delay %d is negative (%s)", i+1, d))
		}
	}
	table := slices.Clone(delays)
	return func(r *route) {
		r.delay = func(attempt int) time.Duration { return table[min(max(attempt, 1), len(table))-1] }
	}
}

// JobMaxAttempts bounds the attempts of the job type to n (at least 1): when attempt n
// ([Message.Attempt], which does not count receives interrupted by a shutdown or a
// Lambda deadline that the idempotency store recorded) fails with an error that would
// retry it (an ordinary error or a [RetryAfter]; not a deferral), both hosts send the
// message to the dead-letter queue with reason [ReasonRetriesExhausted] and that error,
// instead of retrying it until the redrive policy's maxReceiveCount. n must be below
// the queue's maxReceiveCount, so SQS never moves the message first (without a reason),
// and the difference is what interrupted receives may use: the poller refuses to start
// otherwise ([ServeMux.MaxAttempts] is what it reads). With dead-letter sends disabled
// (the poller's Config.DisableDeadLetterSend) the limit does not apply. It panics when
// n is below 1.
func JobMaxAttempts(n int) JobOption {
	if n < 1 {
		panic(fmt.Sprintf("sqsworker: JobMaxAttempts(%d): at least 1 attempt", n))
	}
	return func(r *route) { r.maxAttempts = n }
}

// JobMiddleware wraps the job type's handler in middlewares (the first one outermost),
// inside the mux's timeout and backoff.
func JobMiddleware(middlewares ...Middleware) JobOption {
	return func(r *route) { r.middlewares = append(r.middlewares, middlewares...) }
}

// route is one registered job type.
type route struct {
	handler Handler
	timeout time.Duration
	// delay is the retry delay after a failed attempt (JobBackoff, JobRetryDelays); nil:
	// the host's.
	delay       func(attempt int) time.Duration
	maxAttempts int // JobMaxAttempts; 0: none
	middlewares []Middleware
}

// Register routes messages of jobType to handler, with the per-type options. It panics
// when jobType is empty, handler is nil or jobType is already registered: these are
// programming errors found at start, like http.ServeMux's.
func (mux *ServeMux) Register(jobType string, handler Handler, options ...JobOption) {
	if jobType == "" {
		panic("sqsworker: ServeMux.Register with an empty job type")
	}
	if handler == nil {
		panic(fmt.Sprintf("sqsworker: ServeMux.Register(%q) with a nil handler", jobType))
	}
	r := &route{}
	for _, option := range options {
		option(r)
	}
	r.handler = Chain(handler, r.middlewares...)
	mux.mu.Lock()
	defer mux.mu.Unlock()
	if _, exists := mux.routes[jobType]; exists {
		panic(fmt.Sprintf("sqsworker: job type %q registered twice", jobType))
	}
	mux.routes[jobType] = r
}

// RegisterFunc is [ServeMux.Register] for a function.
func (mux *ServeMux) RegisterFunc(jobType string, handler func(ctx context.Context, message *Message) error, options ...JobOption) {
	mux.Register(jobType, HandlerFunc(handler), options...)
}

// JobTypes returns the registered job types, sorted.
func (mux *ServeMux) JobTypes() []string {
	mux.mu.RLock()
	defer mux.mu.RUnlock()
	types := make([]string, 0, len(mux.routes))
	for name := range mux.routes {
		types = append(types, name)
	}
	slices.Sort(types)
	return types
}

// MaxAttempts returns the job types registered with [JobMaxAttempts] and their limits
// (nil when none is): what the poller checks against each queue's maxReceiveCount at
// start.
func (mux *ServeMux) MaxAttempts() map[string]int {
	mux.mu.RLock()
	defer mux.mu.RUnlock()
	var limits map[string]int
	for name, r := range mux.routes {
		if r.maxAttempts > 0 {
			if limits == nil {
				limits = map[string]int{}
			}
			limits[name] = r.maxAttempts
		}
	}
	return limits
}

// Registered reports whether jobType has a handler. It is the set of job types a
// metrics exporter may label by name (otelsqsworker.MetricsConfig.Registered): any other
// type is whatever a sender wrote into the job-type attribute.
func (mux *ServeMux) Registered(jobType string) bool {
	mux.mu.RLock()
	defer mux.mu.RUnlock()
	_, ok := mux.routes[jobType]
	return ok
}

// Handle routes message to its job type's handler; see [ServeMux].
func (mux *ServeMux) Handle(ctx context.Context, message *Message) error {
	jobType, err := mux.jobType(message)
	if err != nil {
		return Permanent("UnknownJobType", err)
	}
	mux.mu.RLock()
	r := mux.routes[jobType]
	mux.mu.RUnlock()
	if r == nil {
		return Permanent("UnknownJobType", fmt.Errorf("no handler for job type %q (registered: %s)", jobType, strings.Join(mux.JobTypes(), ", ")))
	}
	if _, err := notDue(message, mux.now(), mux.horizon); err != nil {
		return err
	}
	return r.serve(ctx, message)
}

// jobType reads the message's job type from the attribute or, when configured, the body.
func (mux *ServeMux) jobType(message *Message) (string, error) {
	if jobType := message.JobType(); jobType != "" {
		return jobType, nil
	}
	if mux.typeField == "" {
		return "", fmt.Errorf("message has no %q attribute", AttributeJobType)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(message.Body), &fields); err != nil {
		return "", fmt.Errorf("message has no %q attribute and its body is not a JSON object: %v", AttributeJobType, err)
	}
	raw, ok := fields[mux.typeField]
	if !ok {
		return "", fmt.Errorf("message has no %q attribute and its body no %q field", AttributeJobType, mux.typeField)
	}
	var jobType string
	if err := json.Unmarshal(raw, &jobType); err != nil || jobType == "" {
		return "", fmt.Errorf("message has no %q attribute and its body's %q field is not a non-empty string: %s", AttributeJobType, mux.typeField, raw)
	}
	return jobType, nil
}

// serve calls the route's handler under its timeout and backoff.
func (r *route) serve(ctx context.Context, message *Message) error {
	ctx = context.WithValue(ctx, messageKey{}, message)
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.timeout, fmt.Errorf("%w (%s)", ErrJobTimeout, r.timeout))
		defer cancel()
	}
	err := r.handler.Handle(ctx, message)
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrJobTimeout) && !errors.Is(err, ErrJobTimeout) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	last := r.maxAttempts > 0 && message.Attempt() >= r.maxAttempts // no retry delay to add
	if r.delay != nil && !last && Classify(err).Kind == OutcomeRetry {
		err = RetryAfter(r.delay(message.Attempt()), err)
	}
	if r.maxAttempts > 0 {
		if kind := Classify(err).Kind; kind == OutcomeRetry || kind == OutcomeRetryAfter {
			err = &attemptLimitError{limit: r.maxAttempts, err: err}
		}
	}
	return err
}

// attemptLimitError is a failed attempt of a job type with [JobMaxAttempts]: err, and
// the type's limit, which the hosts read with [AttemptLimit].
type attemptLimitError struct {
	limit int
	err   error
}

func (e *attemptLimitError) Error() string { return e.err.Error() }
func (e *attemptLimitError) Unwrap() error { return e.err }

// AttemptLimit returns the [JobMaxAttempts] limit a failed attempt's error carries (the
// mux attaches it to every failure of such a job type that would be retried), and
// whether it carries one. Both hosts' settlement reads it: when the message's
// [Message.Attempt] has reached the limit, the message is dead-lettered with reason
// [ReasonRetriesExhausted].
func AttemptLimit(err error) (int, bool) {
	if limited, ok := errors.AsType[*attemptLimitError](err); ok {
		return limited.limit, true
	}
	return 0, false
}

type messageKey struct{}

// MessageFromContext returns the message a [ServeMux] is serving in ctx (for example to a
// [RegisterJSON] handler that wants its id or receive count), and false outside one.
func MessageFromContext(ctx context.Context) (*Message, bool) {
	message, ok := ctx.Value(messageKey{}).(*Message)
	return message, ok
}
