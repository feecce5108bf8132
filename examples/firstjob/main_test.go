package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// syncBuffer is a strings.Builder safe for the handlers' concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func TestFirstJobOnEmulator(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out syncBuffer
	if err := run(ctx, client, queue.URL, &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("run returned only at the test's deadline; output:\n%s", out.b.String())
	}
	want := regexp.MustCompile(`^sent welcome-email as message [0-9a-f-]+
sent resize-image as message [0-9a-f-]+, due in 2s
welcome-email: sent to ada@example.com
resize-image: s3://photos/cat.png to 640 px wide
$`)
	if got := out.b.String(); !want.MatchString(got) {
		t.Errorf("output:\n%s\nwant it to match\n%s", got, want)
	}
	testenv.Eventually(t, 10*time.Second, "both jobs deleted", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return visible+inFlight == 0
	})
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible+inFlight != 0 {
		t.Errorf("%d messages in the dead-letter queue", visible+inFlight)
	}
}
