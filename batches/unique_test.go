package batches_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

// A producer without Config.Unique cannot send a callback once to a standard queue:
// Open refuses it, writing nothing, instead of the batch's last job failing after all
// the work. A FIFO callback queue needs no unique store (its deduplication id).
func TestOpenRefusesAProducerWithoutUniqueKeys(t *testing.T) {
	t.Parallel()
	dynamo := testenv.DynamoDB(t)
	sender, err := producer.New(testenv.SQS(t), producer.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.False(t, sender.EnforcesUniqueKeys())
	b, err := batches.New(dynamo, sender, batches.Config{Table: testenv.NewTable(t, dynamo)})
	require.NoError(t, err)
	job := producer.Job{Type: "done", Body: "done"}
	_, err = b.Open(context.Background(), batches.Callbacks{Complete: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks", Job: job}})
	require.ErrorIs(t, err, producer.ErrNoUniqueStore)
	assert.Contains(t, err.Error(), "complete callback")
	fifo := job
	fifo.GroupID = "batches"
	_, err = b.Open(context.Background(), batches.Callbacks{Success: &batches.CallbackJob{QueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/callbacks.fifo", Job: fifo}})
	assert.NoError(t, err)
}
