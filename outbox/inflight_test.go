package outbox

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/producer"
)

// slowSQS is a fake SQS whose SendMessageBatch calls each stay open until want calls
// are open at once (or a bound passes, when the caller never gets there), so a test
// tells calls that overlap from calls made one after the other without timing them. It
// records the most calls open at once, every group's entries open at once and the order
// in which each group's entries were sent; the bodies in failBodies fail on SQS's side
// (in a batch and in the producer's retry of one).
type slowSQS struct {
	countingSQS
	want  int
	bound time.Duration

	mu         sync.Mutex
	open, most int
	wasReached bool // reached is closed
	batches    int  // SendMessageBatch calls
	reached    chan struct{}
	groupsOpen map[string]int
	overlaps   []string // groups with two entries open at once
	sent       map[string][]string
}

func newSlowSQS(want int) *slowSQS {
	return &slowSQS{countingSQS: countingSQS{failBodies: map[string]bool{}}, want: want, bound: 2 * time.Second, reached: make(chan struct{}),
		groupsOpen: map[string]int{}, sent: map[string][]string{}}
}

func (s *slowSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.mu.Lock()
	s.open++
	s.batches++
	s.most = max(s.most, s.open)
	if s.open == s.want && !s.wasReached {
		s.wasReached = true
		close(s.reached)
	}
	var groups []string
	for _, e := range in.Entries {
		body := aws.ToString(e.MessageBody)
		group := strings.SplitN(body, "-", 2)[0]
		groups = append(groups, group)
		s.groupsOpen[group]++
		if s.groupsOpen[group] > 1 {
			s.overlaps = append(s.overlaps, group)
		}
		s.sent[group] = append(s.sent[group], body)
	}
	s.mu.Unlock()
	select {
	case <-s.reached:
	case <-time.After(s.bound): // the calls never overlapped as wanted: most says so
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	out := &sqs.SendMessageBatchOutput{}
	for i, e := range in.Entries {
		s.groupsOpen[groups[i]]--
		body := aws.ToString(e.MessageBody)
		if s.failBodies[body] {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError")})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m-" + body)})
	}
	return out, nil
}

// Forty entries of a standard queue are four calls: with InFlight 4 the four are open
// at once (the fake answers none before all four arrived), and every entry is published.
func TestPublishKeepsInFlightCallsOpenAtOnce(t *testing.T) {
	api := newSlowSQS(4)
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	var entries []Entry
	for i := range 40 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: "s-" + strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	started := time.Now()
	for _, o := range PublishInFlight(context.Background(), p, 4, entries, nil) {
		assert.True(t, o.Published())
	}
	assert.Equal(t, 4, api.most, "four calls open at once")
	assert.Less(t, time.Since(started), api.bound, "no call waited for the bound")
	assert.Len(t, api.sent["s"], 40)
}

// InFlight 1 is one call at a time: the fake never sees two open (each call waits for
// its bound, so the test keeps it short).
func TestPublishInFlightOneSendsOneCallAtATime(t *testing.T) {
	api := newSlowSQS(2)
	api.bound = 20 * time.Millisecond
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	var entries []Entry
	for i := range 30 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: "s-" + strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	for _, o := range PublishInFlight(context.Background(), p, 1, entries, nil) {
		assert.True(t, o.Published())
	}
	assert.Equal(t, 1, api.most)
}

// Forty FIFO groups, three entries each, interleaved: 120 entries in calls of ten with
// InFlight 4. The four calls of the groups' first entries are open at once, no group
// ever has two entries open at once, and each group is sent in its order. Group g3's
// second entry fails on SQS's side: its third is held, not sent, while the other groups
// are all published.
func TestPublishKeepsGroupOrderWithCallsInFlight(t *testing.T) {
	const groups, perGroup = 40, 3
	api := newSlowSQS(4)
	api.failBodies["g3-1"] = true
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	var entries []Entry
	for i := range perGroup {
		for g := range groups {
			job := producer.Job{Body: "g" + strconv.Itoa(g) + "-" + strconv.Itoa(i), GroupID: "g" + strconv.Itoa(g)}
			e, err := NewEntry("https://sqs.example/1/q.fifo", job, time.Now())
			require.NoError(t, err)
			entries = append(entries, e)
		}
	}
	outcomes := PublishInFlight(context.Background(), p, 4, entries, nil)
	assert.Equal(t, 4, api.most, "four calls open at once")
	assert.Empty(t, api.overlaps, "no group has two entries in flight at once")
	for g := range groups {
		group := "g" + strconv.Itoa(g)
		want := []string{group + "-0", group + "-1", group + "-2"}
		if g == 3 {
			want = want[:2] // g3-1 failed: g3-2 is held
		}
		assert.Equal(t, want, api.sent[group], "group %s in order", group)
	}
	for i, e := range entries {
		body := e.Job.Body
		switch {
		case body == "g3-1":
			assert.Error(t, outcomes[i].Retry, body)
		case e.GroupID == "g3" && body != "g3-0":
			assert.ErrorContains(t, outcomes[i].Held, `an earlier entry of message group "g3" was not sent`, body)
		default:
			assert.True(t, outcomes[i].Published(), body)
		}
	}
}

// With InFlight 2, a queue whose calls all fail gets two calls (the two open at once
// when the first failure came back), not the other three.
func TestPublishStopsCallingADownQueueWithCallsInFlight(t *testing.T) {
	api := newSlowSQS(2)
	var entries []Entry
	for i := range 50 {
		e, err := NewEntry("https://sqs.example/1/q", producer.Job{Body: strconv.Itoa(i)}, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
		api.failBodies[strconv.Itoa(i)] = true
	}
	p, err := producer.New(api, producer.Config{})
	require.NoError(t, err)
	outcomes := PublishInFlight(context.Background(), p, 2, entries, nil)
	assert.Equal(t, 2, api.most, "two calls open at once")
	assert.Equal(t, 2, api.batches, "SendMessageBatch calls")
	for _, o := range outcomes {
		assert.Error(t, o.Retry)
	}
	assert.ErrorContains(t, outcomes[49].Retry, "an earlier call to https://sqs.example/1/q failed in this cycle")
}

func TestNewRelayRefusesAnInFlightOutOfRange(t *testing.T) {
	p, err := producer.New(&countingSQS{}, producer.Config{})
	require.NoError(t, err)
	for _, n := range []int{-1, MaxInFlight + 1} {
		_, err := NewRelay(nopStore{}, p, RelayConfig{InFlight: n})
		assert.ErrorContains(t, err, "RelayConfig.InFlight "+strconv.Itoa(n)+" is outside 1 to 100")
	}
}

type nopStore struct{}

func (nopStore) Name() string { return "nop" }
func (nopStore) Claim(context.Context, int, time.Duration) (Claim, error) {
	return nil, nil
}
func (nopStore) Summary(context.Context) (Summary, error)  { return Summary{}, nil }
func (nopStore) Wait(ctx context.Context, d time.Duration) {}
func (nopStore) Close()                                    {}

// Two entries with one unique key on a standard queue, in different calls: the second
// call waits for the first (the repeat must find the first send's key confirmed, not
// pending); an unrelated call waits for nothing.
func TestPlanCallsOrdersCallsOfOneUniqueKey(t *testing.T) {
	var entries []Entry
	for i := range 21 {
		job := producer.Job{Body: strconv.Itoa(i)}
		if i == 0 || i == 20 {
			job.UniqueKey = "order-7"
		}
		e, err := NewEntry("https://sqs.example/1/q", job, time.Now())
		require.NoError(t, err)
		entries = append(entries, e)
	}
	calls := planCalls(entries, make([]Outcome, len(entries)))
	require.Len(t, calls, 3)
	assert.Empty(t, calls[0].after)
	assert.Empty(t, calls[1].after, "no key of call 0")
	assert.Equal(t, []*call{calls[0]}, calls[2].after, "the key's second entry waits for its first")
}
