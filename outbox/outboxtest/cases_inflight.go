package outboxtest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/producer"
)

// inFlightLog wraps the SQS client of a relay: it keeps every SendMessageBatch open
// until want are open at once (or a bound passes, when the relay never gets there), so
// that the calls of a cycle overlap for sure; it records the most calls open at once
// and every FIFO group that had two entries in open calls at once, and fails the first
// send of the entry fail names, in its batch and in the producer's retry of it alone,
// on SQS's side.
type inFlightLog struct {
	*sqs.Client
	want    int
	fail    string
	reached chan struct{}

	mu         sync.Mutex
	open, most int
	wasReached bool // reached is closed
	groupsOpen map[string]int
	overlaps   []string
	failed     map[string]int // outbox id → failed sends
}

func newInFlightLog(client *sqs.Client, want int, fail string) *inFlightLog {
	return &inFlightLog{Client: client, want: want, fail: fail, reached: make(chan struct{}),
		groupsOpen: map[string]int{}, failed: map[string]int{}}
}

func (l *inFlightLog) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	l.mu.Lock()
	l.open++
	l.most = max(l.most, l.open)
	if l.open == l.want && !l.wasReached {
		l.wasReached = true
		close(l.reached)
	}
	send := *in
	send.Entries = nil
	var failed []sqstypes.BatchResultErrorEntry
	for _, e := range in.Entries {
		l.groupsOpen[aws.ToString(e.MessageGroupId)]++
		if l.groupsOpen[aws.ToString(e.MessageGroupId)] > 1 {
			l.overlaps = append(l.overlaps, aws.ToString(e.MessageGroupId))
		}
		if id := aws.ToString(e.MessageAttributes[outbox.AttributeOutboxID].StringValue); id == l.fail && l.failed[id] == 0 {
			l.failed[id]++
			failed = append(failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("injected")})
			continue
		}
		send.Entries = append(send.Entries, e)
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
		for _, e := range in.Entries {
			l.groupsOpen[aws.ToString(e.MessageGroupId)]--
		}
	}()
	select {
	case <-l.reached:
	case <-time.After(10 * time.Second): // the calls did not overlap: most tells
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := &sqs.SendMessageBatchOutput{}
	if len(send.Entries) > 0 {
		var err error
		if out, err = l.Client.SendMessageBatch(ctx, &send, opts...); err != nil {
			return nil, err
		}
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}

func (l *inFlightLog) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	l.mu.Lock()
	id := aws.ToString(in.MessageAttributes[outbox.AttributeOutboxID].StringValue)
	fail := id == l.fail && l.failed[id] == 1
	if fail {
		l.failed[id]++
	}
	l.mu.Unlock()
	if fail {
		return nil, &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: errors.New("injected: service unavailable")}
	}
	return l.Client.SendMessage(ctx, in, opts...)
}

// Forty FIFO groups of three entries (three transactions of one entry per group) and
// a relay claiming all 120 at once with InFlight 4: the four calls of the groups' first
// entries are open at once, no group ever has entries in two open calls, and every
// group arrives in commit order. G3's second entry fails on SQS's side (in its batch
// and sent alone): it is retried in a later cycle, and G3's third entry waits for it.
func testFIFOGroupOrderWithCallsInFlight(t *testing.T, h Harness) {
	client := testenv.SQS(t)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{FIFO: true})
	const groups, perGroup = 40, 3
	want := map[string][]string{}
	var failing string
	for i := range perGroup {
		batch := groupJobs(groups, i)
		for j, e := range h.Commit(t, queue.URL, batch...) {
			group := batch[j].GroupID
			want[group] = append(want[group], e.ID)
			if group == "G3" && i == 1 {
				failing = e.ID
			}
		}
	}
	log := newInFlightLog(client, 4, failing)
	config := fast
	config.BatchSize, config.InFlight = groups*perGroup, 4
	r := newRelay(t, h, NewProducer(t, log), config)
	StartRelay(t, r)
	got := byGroup(Drain(t, client, queue.URL, groups*perGroup, 60*time.Second))
	assert.Equal(t, want, got, "every group in commit order")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, 4, log.most, "four calls open at once")
	assert.Empty(t, log.overlaps, "no group in two open calls")
	assert.Equal(t, 2, log.failed[failing], "G3's second entry failed in its batch and alone")
	queueEmpty(t, client, queue.URL)
}

// groupJobs returns n jobs of groups G0 to G(n-1), the i-th entry of each.
func groupJobs(n, i int) []producer.Job {
	jobs := make([]producer.Job, n)
	for g := range jobs {
		jobs[g] = GroupJob("G"+strconv.Itoa(g), i*1000+g)
	}
	return jobs
}
