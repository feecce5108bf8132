package redrive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/redrive"
)

// Peek shows the failure attributes and expiry of dead letters, uses one receive per
// message and releases them all.
func TestPeekDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	deadLetterThroughReceives(t, client, queue, "policy", 1)
	deadLetter(t, client, queue.URL, &sqsworker.Message{ID: "p1", Body: `{"id":"p1"}`, ReceiveCount: 2}, "HTTP410")

	result, err := redrive.Peek(ctx, client, queue.DeadLetterQueueURL, redrive.PeekOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Messages) != 2 || result.ReceivesUsed != 2 || result.Released != 2 || result.Retention != 4*24*time.Hour {
		t.Fatalf("result = %+v, want 2 messages, 2 receives used, 2 released, retention 4 days", result)
	}
	byID := map[string]redrive.DeadLetter{}
	for _, letter := range result.Messages {
		byID[idOf(t, letter.Body)] = letter
	}
	host := byID["p1"]
	if host.FailureReason != "HTTP410" || host.FailureError != "endpoint answered HTTP410" || host.SourceQueue != queue.ARN ||
		host.FailedReceiveCount != 2 || host.ReceiveCount != 1 {
		t.Fatalf("host dead letter = %+v", host)
	}
	if !host.ExpiryExact || !host.ExpiresAt.Equal(host.SentAt.Add(4*24*time.Hour)) || time.Since(host.SentAt) > time.Minute {
		t.Fatalf("host dead letter expiry: sent %s, expires %s (exact %v)", host.SentAt, host.ExpiresAt, host.ExpiryExact)
	}
	policy := byID["policy0"]
	if policy.FailureReason != "" || policy.SourceQueue != queue.ARN || !policy.ExpiryExact {
		t.Fatalf("redrive-policy dead letter = %+v, want its source from DeadLetterQueueSourceArn", policy)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL); visible != 2 || inFlight != 0 {
		t.Fatalf("after the peek: %d visible, %d in flight; want both released", visible, inFlight)
	}
}

// Peeking a queue with a redrive policy needs Force, because receives count toward
// maxReceiveCount.
func TestPeekRedrivePolicyNeedsForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	sendAll(t, client, queue.URL, []string{body("a", 0), body("b", 0), body("c", 0)}, nil)

	_, err := redrive.Peek(ctx, client, queue.URL, redrive.PeekOptions{})
	if !errors.Is(err, redrive.ErrPeekNeedsForce) || !strings.Contains(err.Error(), "maxReceiveCount 5") {
		t.Fatalf("err = %v, want ErrPeekNeedsForce naming maxReceiveCount 5", err)
	}
	result, err := redrive.Peek(ctx, client, queue.URL, redrive.PeekOptions{Force: true, MaxMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Messages) != 2 || result.ReceivesUsed != 2 || result.Released != 2 || result.RedrivePolicy.MaxReceiveCount != 5 {
		t.Fatalf("result = %+v, want 2 of the 3 messages, 2 receives used and released", result)
	}
	if visible, inFlight := testenv.Counts(t, client, queue.URL); visible != 3 || inFlight != 0 {
		t.Fatalf("after the peek: %d visible, %d in flight; want all 3 visible", visible, inFlight)
	}
	if _, err := redrive.Peek(ctx, client, queue.URL+"-missing", redrive.PeekOptions{}); !errors.Is(err, redrive.ErrQueueNotFound) {
		t.Fatalf("missing queue: err = %v, want ErrQueueNotFound", err)
	}
}

// A peek's visibility timeout is bounded (issue 19, item 16): a value outside 1 s to
// MaxPeekVisibility is refused before anything is received. Unbounded, 13h was sent to
// SQS (AWS refuses more than 12 h; LocalStack takes it), and 1000000h overflowed the
// int32 seconds, so the peek's own receives saw each message twice (4 receives used for
// 2 messages).
func TestPeekVisibilityBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
	sendAll(t, client, queue.URL, []string{body("a", 0), body("b", 0)}, nil)
	for _, visibility := range []time.Duration{-time.Second, 500 * time.Millisecond, redrive.MaxPeekVisibility + time.Second, 13 * time.Hour, 1000000 * time.Hour} {
		result, err := redrive.Peek(ctx, client, queue.URL, redrive.PeekOptions{VisibilityTimeout: visibility})
		if !errors.Is(err, redrive.ErrInvalidPeekOptions) || result != nil || !strings.Contains(err.Error(), "outside 1s to 15m0s") {
			t.Errorf("visibility %s: result %+v, err %v; want ErrInvalidPeekOptions naming 1s to 15m0s", visibility, result, err)
		}
	}
	// Nothing was received: the first real peek sees each message at its first receive.
	result, err := redrive.Peek(ctx, client, queue.URL, redrive.PeekOptions{VisibilityTimeout: redrive.MaxPeekVisibility, Patience: testenv.ReceiveTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Messages) != 2 || result.ReceivesUsed != 2 || result.Messages[0].ReceiveCount != 1 || result.Messages[1].ReceiveCount != 1 {
		t.Fatalf("result = %+v, want 2 messages at receive 1, 2 receives used", result)
	}
}
