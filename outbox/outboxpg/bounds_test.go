package outboxpg

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// The store keeps the job's prepared form as it is: every option the producer knows
// (here a unique key, a binary attribute and a delay past the old whole-second column)
// comes back unchanged.
func TestKeepsThePreparedJobAsItIs(t *testing.T) {
	t.Parallel()
	queue := "https://sqs.example/1/q"
	job := producer.Job{
		Type: "report", Body: "{}", Delay: math.MaxInt32*time.Second + 1500*time.Millisecond,
		UniqueKey: "report-11", UniqueFor: math.MaxInt32*time.Second + 2*time.Second, UniqueMode: producer.UniqueUntilDone,
		Attributes: map[string]sqstypes.MessageAttributeValue{"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}}},
	}
	h := newPostgresSuite(t)
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	entries, err := h.outbox.Enqueue(ctx, tx, queue, job)
	require.NoError(t, err)
	read, err := listEntries(ctx, tx, "entry", `SELECT `+entryColumns+` FROM sqsworker_outbox WHERE id = $1`, entries[0].ID)
	require.NoError(t, err)
	require.Len(t, read, 1)
	assert.Equal(t, entries[0].Job, read[0].Job)
	assert.Equal(t, job.Delay, read[0].Job.Delay)
}
