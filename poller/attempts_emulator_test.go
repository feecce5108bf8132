package poller

// Attempts per job type (sqsworker.JobMaxAttempts) on the emulator.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// TestEmulatorJobMaxAttempts: on a queue with maxReceiveCount 5, a job type limited to 2
// attempts that always fails is handled twice, one retry delay (its table, 1 s) apart,
// then sent to the dead-letter queue by the worker with reason RetriesExhausted and the
// second attempt's error; a type without a limit on the same queue keeps the redrive
// policy's 5 receives.
func TestEmulatorJobMaxAttempts(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	send := func(jobType string) string {
		t.Helper()
		input := sendInput(queue.URL, jobType+"-job", "")
		input.MessageAttributes = map[string]types.MessageAttributeValue{sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String(jobType)}}
		sent, err := client.SendMessage(context.Background(), input)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(sent.MessageId)
	}
	limitedID, unlimitedID := send("limited"), send("unlimited")
	var limitedCalls, unlimitedCalls atomic.Int32
	var attemptTimes [2]atomic.Int64
	mux := sqsworker.NewServeMux()
	mux.RegisterFunc("limited", func(_ context.Context, m *sqsworker.Message) error {
		n := limitedCalls.Add(1)
		if n <= 2 {
			attemptTimes[n-1].Store(time.Now().UnixNano())
		}
		return fmt.Errorf("attempt %d failed", m.Attempt())
	}, sqsworker.JobMaxAttempts(2), sqsworker.JobRetryDelays(time.Second))
	mux.RegisterFunc("unlimited", func(context.Context, *sqsworker.Message) error {
		unlimitedCalls.Add(1)
		return sqsworker.RetryAfter(0, fmt.Errorf("unlimited fails"))
	})
	startServer(t, client, Config{QueueURL: queue.URL, WaitTime: time.Second, Logger: quietLogger()}, mux)
	dead := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1}, 2, time.Minute)
	byID := map[string]map[string]string{}
	for _, message := range dead {
		attributes := map[string]string{}
		for name, value := range message.MessageAttributes {
			attributes[name] = aws.ToString(value.StringValue)
		}
		byID[attributes[sqsworker.AttributeFailureMessageID]] = attributes
	}
	limited, unlimited := byID[limitedID], byID[unlimitedID]
	if limited[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted || limited[sqsworker.AttributeFailureError] != "attempt 2 failed" || limited[sqsworker.AttributeFailureReceiveCount] != "2" {
		t.Errorf("limited job's dead-letter copy %v, want RetriesExhausted, the second attempt's error, receive count 2", limited)
	}
	if unlimited[sqsworker.AttributeFailureReason] != sqsworker.ReasonRetriesExhausted || unlimited[sqsworker.AttributeFailureReceiveCount] != "5" {
		t.Errorf("unlimited job's dead-letter copy %v, want RetriesExhausted at receive 5", unlimited)
	}
	if got := limitedCalls.Load(); got != 2 {
		t.Errorf("limited handler called %d times, want its MaxAttempts 2", got)
	}
	if gap := time.Duration(attemptTimes[1].Load() - attemptTimes[0].Load()); gap < time.Second {
		t.Errorf("second attempt %s after the first, want at least the table's 1s", gap)
	}
	if got := unlimitedCalls.Load(); got != 5 {
		t.Errorf("unlimited handler called %d times, want maxReceiveCount 5", got)
	}
}

// TestEmulatorJobMaxAttemptsRefusedAtStart: Start refuses a job type whose MaxAttempts
// is not below the queue's maxReceiveCount, naming the type, the numbers and the queue.
func TestEmulatorJobMaxAttemptsRefusedAtStart(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 3})
	mux := sqsworker.NewServeMux()
	noop := func(context.Context, *sqsworker.Message) error { return nil }
	mux.RegisterFunc("fits", noop, sqsworker.JobMaxAttempts(2))
	mux.RegisterFunc("too-many", noop, sqsworker.JobMaxAttempts(3))
	server := newServer(t, client, Config{QueueURL: queue.URL, WaitTime: time.Second}, mux)
	err := server.Start(context.Background())
	if err == nil {
		_ = server.Shutdown(context.Background())
		t.Fatal("Start accepted MaxAttempts 3 on a queue with maxReceiveCount 3")
	}
	want := fmt.Sprintf(`poller: job type "too-many" has MaxAttempts 3, not below queue %s's maxReceiveCount 3`, queue.URL)
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), `"fits"`) {
		t.Errorf("Start error %q, want only %q", err, want)
	}
}
