package batches_test

// Messages whose batch attribute was not written by Batch.Add: refused, nothing counted.

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/producer"
)

func sendRaw(t *testing.T, e *env, jobID, batchAttribute string) {
	t.Helper()
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := e.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queue.URL), MessageBody: aws.String(`{"N":7}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{sqsworker.AttributeJobID: str(jobID), batches.AttributeBatch: str(batchAttribute)}})
	require.NoError(t, err)
}

// TestEmulatorHostileAttributeIsRefused: a message whose batch attribute names a
// non-batch item key, or a batch id that is no ULID, fails permanently without running
// its handler; one that names a real batch with the wrong token, or a batch that was
// never opened, runs but is not counted, and the refusal is logged with its reason.
func TestEmulatorHostileAttributeIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 5)
	lines, logger := testenv.NewLogLines()
	b, err := batches.New(e.api, e.producer, batches.Config{Table: e.table, Shards: 2, Logger: logger})
	require.NoError(t, err)
	w := newWorker(t, e.queue.URL)
	startPoller(t, e.sqs, e.queue.URL, 2, sqsworker.Chain(w, b.Middleware(batches.MiddlewareConfig{})))

	victim := e.open(t)
	victimJobs, err := victim.Add(context.Background(), e.queue.URL, producer.Job{Type: "work", Payload: work{N: 1, Block: true}})
	require.NoError(t, err)
	require.NoError(t, victim.Seal(context.Background()))

	token := strings.Repeat("0", 32)
	sendRaw(t, e, "h1", "idempotency##order-1:"+token+":1")
	sendRaw(t, e, "h2", "unique#x:"+token+":1")
	sendRaw(t, e, "h3", victim.ID()+"#shard:"+token+":1")
	letters := testenv.Receive(t, e.sqs, sqsReceive(e.queue.DeadLetterQueueURL), 3, wait)
	require.Len(t, letters, 3)
	for _, letter := range letters {
		assert.Equal(t, "BatchAttributeInvalid", aws.ToString(letter.MessageAttributes[sqsworker.AttributeFailureReason].StringValue))
	}
	for _, id := range []string{"h1", "h2", "h3"} {
		assert.Zero(t, w.calls(id), "the handler of %s did not run", id)
	}

	sendRaw(t, e, "h4", victim.ID()+":"+token+":2")                  // the victim's id, a guessed token
	sendRaw(t, e, "h5", "01KBQ2ZP5E8Y9V0D2X4M6N8R1T"+":"+token+":1") // a batch never opened
	testenv.Eventually(t, wait, "both handled and refused", func() bool {
		return len(lines.Records("batches: the batch refused the job's end; it is not counted")) == 2
	})
	reasons := ""
	for _, record := range lines.Records("batches: the batch refused the job's end; it is not counted") {
		reasons += record["error"].(string) + "\n"
	}
	assert.Contains(t, reasons, "the attribute's token is not the batch's")
	assert.Contains(t, reasons, "never opened")
	assert.Equal(t, 1, w.calls("h4"))
	assert.Equal(t, 1, w.calls("h5"))

	status, err := e.b.Get(context.Background(), victim.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 1, Pending: 1}, status.Counts, "the victim counted nothing")
	close(w.release)
	status = e.waitStatus(t, victim.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 1, Succeeded: 1}, status.Counts)

	// The victim's own job id with a guessed token: its marker exists, and holds the
	// batch's token, so this is refused too, not taken for a duplicate.
	sendRaw(t, e, victimJobs[0], victim.ID()+":"+token+":2")
	testenv.Eventually(t, wait, "the forged copy handled and refused", func() bool {
		return len(lines.Records("batches: the batch refused the job's end; it is not counted")) == 3
	})
	status, err = e.b.Get(context.Background(), victim.ID())
	require.NoError(t, err)
	assert.Equal(t, batches.Counts{Added: 1, Succeeded: 1}, status.Counts)
	assert.Equal(t, map[string]int{victim.ID() + ":success": 1}, e.settled(t))
}

// countingSender checks, at each send of a batch's jobs, that their counts were raised
// already: it reads the batch's pending count before passing the send on.
type countingSender struct {
	*producer.Producer
	t       *testing.T
	b       *batches.Batches
	batchID string
	atSend  []int64
}

func (c *countingSender) SendPreparedBatch(ctx context.Context, messages []producer.Prepared) ([]producer.Result, error) {
	status, err := c.b.Get(ctx, c.batchID)
	require.NoError(c.t, err)
	c.atSend = append(c.atSend, status.Pending)
	return c.Producer.SendPreparedBatch(ctx, messages)
}

// TestEmulatorAddCountsBeforeSending: when Add sends, the batch already counts the jobs
// as pending.
func TestEmulatorAddCountsBeforeSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, 5)
	sender := &countingSender{Producer: e.producer, t: t}
	b, err := batches.New(e.api, sender, batches.Config{Table: e.table, Shards: 4})
	require.NoError(t, err)
	sender.b = b
	batch, err := b.Open(context.Background(), batches.Callbacks{})
	require.NoError(t, err)
	sender.batchID = batch.ID()
	_, err = batch.Add(context.Background(), e.queue.URL, jobsOf(7, nil)...)
	require.NoError(t, err)
	_, err = batch.Add(context.Background(), e.queue.URL, jobsOf(3, nil)...)
	require.NoError(t, err)
	assert.Equal(t, []int64{7, 10}, sender.atSend)
}
