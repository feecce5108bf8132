package sqsx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// TestBatchCallsOnTheEmulator sends 23 messages, deletes them with one stale receipt
// handle among them, and reads every result.
func TestBatchCallsOnTheEmulator(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	ctx := context.Background()
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})

	entries := make([]types.SendMessageBatchRequestEntry, 23)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{MessageBody: aws.String(strings.Repeat("b", 100))}
	}
	for i, result := range sqsx.SendMessages(ctx, client, queue.URL, entries, 0) {
		require.NoError(t, result.Err, "entry %d", i)
		require.NotEmpty(t, result.MessageID)
	}

	var handles []string
	deadline := time.Now().Add(30 * time.Second)
	for len(handles) < len(entries) && time.Now().Before(deadline) {
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: sqsinfo.MaxBatchEntries, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		require.NoError(t, err)
		for _, m := range output.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
		}
	}
	require.Len(t, handles, len(entries))

	changes := []sqsx.VisibilityChange{{ReceiptHandle: handles[0], Timeout: 90 * time.Second}, {ReceiptHandle: handles[1], Timeout: 1500 * time.Millisecond}}
	for i, result := range sqsx.ChangeVisibility(ctx, client, queue.URL, changes) {
		require.NoError(t, result.Err, "change %d", i)
	}

	for i, result := range sqsx.DeleteMessages(ctx, client, queue.URL, handles) {
		require.NoError(t, result.Err, "delete %d", i)
	}
	testenv.Eventually(t, 30*time.Second, "queue empty after the deletes", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return visible == 0 && inFlight == 0
	})
}
