package sqsworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/redrive"
)

// TestEmulatorJobIDFollowsTheJob follows one job on the emulator through every new
// message it becomes: delay hops (40 minutes on a clock 300 times faster, 1 s hops), a
// retry, the host's own dead-letter send (a permanent failure) and a redrive back to
// its queue. Every attempt sees the id the producer gave it, although the SQS message
// id changes with each hop, the dead letter and the redrive.
func TestEmulatorJobIDFollowsTheJob(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 5})
	clock := scaledClock(300)
	p := newProducer(t, client, producer.Config{MaxHop: time.Second, Now: clock})

	type attempt struct{ jobID, messageID string }
	var mu sync.Mutex
	var attempts []attempt
	mux := sqsworker.NewServeMux()
	sqsworker.RegisterJSON(mux, "charge", func(ctx context.Context, job struct{ Order string }) error {
		message, _ := sqsworker.MessageFromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, attempt{message.JobID(), message.ID})
		switch len(attempts) {
		case 1:
			return sqsworker.RetryAfter(0, errors.New("card network down"))
		case 2:
			return sqsworker.Permanent("CardDeclined", errors.New("declined"))
		}
		return nil
	})
	startPoller(t, client, queue.URL, sqsworker.Chain(mux, sqsworker.DelayMiddleware(p, sqsworker.DelayClock(clock))))

	prepared, err := producer.Prepare(queue.URL, producer.Job{Type: "charge", Payload: map[string]string{"Order": "o-42"}, Delay: 40 * time.Minute})
	require.NoError(t, err)
	firstMessageID, err := p.SendPrepared(context.Background(), prepared)
	require.NoError(t, err)
	jobID := prepared.JobID()
	require.NotEmpty(t, jobID)

	dead := testenv.Receive(t, client, sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue.DeadLetterQueueURL), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1,
	}, 1, 60*time.Second)
	assert.Equal(t, jobID, aws.ToString(dead[0].MessageAttributes[sqsworker.AttributeJobID].StringValue), "the dead-letter copy keeps the id")
	assert.Equal(t, "CardDeclined", aws.ToString(dead[0].MessageAttributes[sqsworker.AttributeFailureReason].StringValue))
	_, err = client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(queue.DeadLetterQueueURL), ReceiptHandle: dead[0].ReceiptHandle, VisibilityTimeout: 0,
	})
	require.NoError(t, err)

	mover, err := redrive.NewMover(client, redrive.Config{Source: queue.DeadLetterQueueURL, Destination: queue.URL})
	require.NoError(t, err)
	result, err := mover.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, result.Moved)

	testenv.Eventually(t, 30*time.Second, "the redriven job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts) == 3
	})
	testenv.WaitQueueEmpty(t, client, queue.URL, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{firstMessageID: true}
	for i, a := range attempts {
		assert.Equal(t, jobID, a.jobID, "attempt %d", i+1)
		seen[a.messageID] = true
	}
	assert.Equal(t, attempts[0].messageID, attempts[1].messageID, "the retry is the same message")
	assert.NotEqual(t, firstMessageID, attempts[0].messageID, "the job hopped: a new message")
	assert.NotEqual(t, attempts[1].messageID, attempts[2].messageID, "the redriven copy is a new message")
	assert.Len(t, seen, 3)
}
