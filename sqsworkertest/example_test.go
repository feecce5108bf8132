package sqsworkertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/sqsworkertest"
)

var handler = sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
	var job struct{ URL string }
	if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
		return sqsworker.Permanent("MalformedBody", err)
	}
	if job.URL == "" {
		return errors.New("downstream 503")
	}
	return nil
})

func ExampleRun() {
	result := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage("{not json"))
	fmt.Println(result.DeadLettered, result.Outcome.Reason)

	message := sqsworkertest.NewMessage(`{}`)
	message.ReceiveCount = 3 // the third receive: the default backoff is 2 s, 4 s, 8 s, ...
	result = sqsworkertest.Run(context.Background(), handler, message)
	fmt.Println(result.Deleted, result.VisibilitySeconds)
	// Output:
	// true MalformedBody
	// false 8
}

func TestRunReportsEveryOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler sqsworker.HandlerFunc
		want    sqsworkertest.Result
	}{
		{name: "success", handler: func(context.Context, *sqsworker.Message) error { return nil },
			want: sqsworkertest.Result{Deleted: true}},
		{name: "retry-after", handler: func(context.Context, *sqsworker.Message) error {
			return sqsworker.RetryAfter(1500*time.Millisecond, errors.New("429"))
		}, want: sqsworkertest.Result{Visibility: 1500 * time.Millisecond, VisibilitySeconds: 2}},
		{name: "panic", handler: func(context.Context, *sqsworker.Message) error { panic("boom") },
			want: sqsworkertest.Result{Visibility: 2 * time.Second, VisibilitySeconds: 2, Panicked: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := sqsworkertest.Run(context.Background(), tc.handler, sqsworkertest.NewMessage("x"))
			got.Err, got.Outcome = nil, sqsworker.Outcome{}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	result := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage("{"), sqsworkertest.WithoutDeadLetterSend())
	if result.DeadLettered || result.Deleted || result.VisibilitySeconds != 2 {
		t.Fatalf("without the dead-letter send: %+v, want a retry after 2 s", result)
	}
}
