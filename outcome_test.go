package sqsworker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	plain := errors.New("downstream 503")
	tests := []struct {
		name       string
		err        error
		wantKind   OutcomeKind
		wantDelay  time.Duration
		wantReason string
		wantFailed bool
	}{
		{name: "nil deletes", err: nil, wantKind: OutcomeDelete},
		{name: "plain error retries with backoff", err: plain, wantKind: OutcomeRetry, wantReason: "HandlerError", wantFailed: true},
		{name: "wrapped plain error retries", err: fmt.Errorf("calling: %w", plain), wantKind: OutcomeRetry, wantReason: "HandlerError", wantFailed: true},
		{name: "context deadline retries", err: context.DeadlineExceeded, wantKind: OutcomeRetry, wantReason: "HandlerError", wantFailed: true},
		{name: "permanent dead-letters with its reason", err: Permanent("MalformedBody", plain), wantKind: OutcomeDeadLetter, wantReason: "MalformedBody", wantFailed: true},
		{name: "permanent without reason", err: Permanent("", nil), wantKind: OutcomeDeadLetter, wantReason: "PermanentError", wantFailed: true},
		{name: "wrapped permanent", err: fmt.Errorf("job 7: %w", Permanent("HTTP410", plain)), wantKind: OutcomeDeadLetter, wantReason: "HTTP410", wantFailed: true},
		{name: "ErrPermanent sentinel", err: fmt.Errorf("bad: %w", ErrPermanent), wantKind: OutcomeDeadLetter, wantReason: "PermanentError", wantFailed: true},
		{name: "retry after", err: RetryAfter(7*time.Second, plain), wantKind: OutcomeRetryAfter, wantDelay: 7 * time.Second, wantReason: "RetryAfter", wantFailed: true},
		{name: "retry after negative clamps to zero", err: RetryAfter(-time.Second, nil), wantKind: OutcomeRetryAfter, wantDelay: 0, wantReason: "RetryAfter", wantFailed: true},
		{name: "wrapped retry after", err: fmt.Errorf("x: %w", RetryAfter(time.Minute, nil)), wantKind: OutcomeRetryAfter, wantDelay: time.Minute, wantReason: "RetryAfter", wantFailed: true},
		{name: "defer is not a failure", err: Defer(12*time.Second, "IdempotencyInProgress"), wantKind: OutcomeDefer, wantDelay: 12 * time.Second, wantReason: "IdempotencyInProgress"},
		{name: "permanent wins over retry after", err: Permanent("Bad", RetryAfter(time.Second, nil)), wantKind: OutcomeDeadLetter, wantReason: "Bad", wantFailed: true},
		{name: "defer wins over retry after", err: RetryAfter(time.Second, Defer(2*time.Second, "Busy")), wantKind: OutcomeDefer, wantDelay: 2 * time.Second, wantReason: "Busy"},
		{name: "panic retries", err: &PanicError{Value: "boom"}, wantKind: OutcomeRetry, wantReason: "Panic", wantFailed: true},
		{name: "cancelled is not a failure", err: Cancelled(nil), wantKind: OutcomeCancelled, wantReason: "Cancelled"},
		{name: "cancelled wins over permanent", err: Cancelled(Permanent("Bad", context.Canceled)), wantKind: OutcomeCancelled, wantReason: "Cancelled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err)
			assert.Equal(t, tc.wantKind, got.Kind, "kind %s", got.Kind)
			assert.Equal(t, tc.wantDelay, got.Delay)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantFailed, got.Failed())
			assert.Equal(t, tc.err, got.Err)
		})
	}
}

func TestChainRunsFirstMiddlewareOutermost(t *testing.T) {
	var calls []string
	wrap := func(name string) Middleware {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, m *Message) error {
				calls = append(calls, name+">")
				err := next.Handle(ctx, m)
				calls = append(calls, "<"+name)
				return err
			})
		}
	}
	handler := Chain(HandlerFunc(func(context.Context, *Message) error {
		calls = append(calls, "handler")
		return nil
	}), wrap("a"), wrap("b"))
	require.NoError(t, handler.Handle(context.Background(), &Message{}))
	assert.Equal(t, []string{"a>", "b>", "handler", "<b", "<a"}, calls)
}
