package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// A unique job's send that finds its key held (a relay re-sending after it died before
// its mark, or a real duplicate) publishes the entry with the holder's message id; an
// unconfirmed holder makes it wait for a retry.
func TestClassifyPublishesADuplicateUniqueJob(t *testing.T) {
	held := classify(producer.Result{Err: &producer.DuplicateJobError{Key: "k", MessageID: "m-1"}})
	assert.True(t, held.Published())
	assert.Equal(t, "m-1", held.MessageID)
	pending := classify(producer.Result{Err: &producer.DuplicateJobError{Key: "k", Pending: true}})
	assert.Error(t, pending.Retry)
	unconfirmed := classify(producer.Result{MessageID: "m-2", Err: fmt.Errorf("%w: timeout", producer.ErrUniqueNotConfirmed)})
	assert.True(t, unconfirmed.Published())
	assert.Equal(t, "m-2", unconfirmed.MessageID)
	noStore := classify(producer.Result{Err: producer.ErrNoUniqueStore})
	assert.ErrorIs(t, noStore.Refused, ErrRefused)
}

// countingSQS answers every call itself, fails the sends of bodies in failBodies (on
// SQS's side: retried, then given up), and records every sent body per call.
type countingSQS struct {
	failBodies map[string]bool
	mu         sync.Mutex
	calls      [][]string
}

func (c *countingSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, []string{aws.ToString(in.MessageBody)})
	if c.failBodies[aws.ToString(in.MessageBody)] {
		return nil, &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: errors.New("service unavailable")}
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

func (c *countingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	var bodies []string
	for _, e := range in.Entries {
		bodies = append(bodies, aws.ToString(e.MessageBody))
		if c.failBodies[aws.ToString(e.MessageBody)] {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: false})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + aws.ToString(e.MessageBody))})
	}
	c.calls = append(c.calls, bodies)
	return out, nil
}

func (c *countingSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": "262144"}}, nil
}

func fifoEntries(t *testing.T, groups ...string) []Entry {
	var entries []Entry
	for i, g := range groups {
		e, err := NewEntry("https://sqs.example/1/q.fifo", producer.Job{Body: g + "-" + strconv.Itoa(i), GroupID: g}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	return entries
}

func TestPublishSendsAGroupOncePerCallAndStopsAGroupAtItsFirstUnsentEntry(t *testing.T) {
	api := &countingSQS{failBodies: map[string]bool{"a-2": true}}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	entries := fifoEntries(t, "a", "b", "a", "b", "a", "c")
	outcomes := Publish(context.Background(), p, entries, nil)

	for _, call := range api.calls {
		seen := map[string]bool{}
		for _, body := range call {
			group := strings.SplitN(body, "-", 2)[0]
			assert.False(t, seen[group], "one entry per group per call: %v", call)
			seen[group] = true
		}
	}
	assert.True(t, outcomes[0].Published())
	assert.True(t, outcomes[1].Published())
	assert.Error(t, outcomes[2].Retry, "a-2 failed on SQS's side")
	assert.True(t, outcomes[3].Published())
	assert.ErrorContains(t, outcomes[4].Held, `an earlier entry of message group "a" was not sent`)
	assert.True(t, outcomes[5].Published())
	for _, call := range api.calls {
		assert.NotContains(t, call, "a-4", "a-4 is never sent while a-2 is unsent")
	}
}

func TestPublishBatchesStandardEntriesByTen(t *testing.T) {
	api := &countingSQS{}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	var entries []Entry
	for i := range 25 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	for _, o := range Publish(context.Background(), p, entries, nil) {
		assert.True(t, o.Published())
	}
	var sizes []int // the calls run at once: in any order
	for _, call := range api.calls {
		sizes = append(sizes, len(call))
	}
	assert.ElementsMatch(t, []int{10, 10, 5}, sizes)
}

func TestRefusedTellsTheEntrysFaultFromTransientOnes(t *testing.T) {
	assert.True(t, refused(&producer.TooLargeError{Size: 2, Limit: 1}))
	assert.True(t, refused(errors.New("producer: the job has 11 message attributes")))
	assert.False(t, refused(context.DeadlineExceeded))
}

// A call of which every entry failed on SQS's side ends the queue's sends for the cycle:
// 25 entries, one call at a time: only the first call's 10 are sent (the producer retries
// them one by one), and every entry is an attempt with that call's error.
func TestPublishStopsCallingAQueueWhoseWholeCallFailed(t *testing.T) {
	api := &countingSQS{failBodies: map[string]bool{}}
	var entries []Entry
	for i := range 25 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
		api.failBodies[strconv.Itoa(i)] = true
	}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	outcomes := PublishInFlight(context.Background(), p, 1, entries, nil)
	for _, call := range api.calls {
		for _, body := range call {
			n, _ := strconv.Atoi(body)
			assert.Less(t, n, 10, "entry %s sent after its queue's whole call failed", body)
		}
	}
	for _, o := range outcomes {
		assert.Error(t, o.Retry)
	}
	assert.ErrorContains(t, outcomes[24].Retry, "an earlier call to https://sqs.example/1/q failed in this cycle")
}
