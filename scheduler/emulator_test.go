package scheduler

// Tests against the local DynamoDB and SQS emulators (internal/testing/testenv); each on its own
// table and queue.

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
)

// The lease: one first holder, a takeover only after expiry with the token plus one, and
// every write of the old holder refused afterwards (the fence), while the new holder
// re-claims the tick the old one left unsent.
func TestEmulatorLeaseTakeoverFencesTheOldLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := testenv.DynamoDB(t)
	table := testenv.NewTable(t, client)
	a := &store{client: client, table: table, lease: "test"}
	b := &store{client: client, table: table, lease: "test"}
	now := time.Now()

	leaseA, err := a.acquire(ctx, "a", nil, now, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(1), leaseA.Token)
	_, err = b.acquire(ctx, "b", nil, now, 5*time.Second)
	require.ErrorIs(t, err, ErrFenced, "the lease exists: no second first holder")
	held, found, err := b.readLease(ctx)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "a", held.Owner)
	_, err = b.acquire(ctx, "b", &held, now.Add(4*time.Second), 5*time.Second)
	require.ErrorIs(t, err, ErrFenced, "no takeover before the expiry")

	tick1, tick2 := now.UTC().Truncate(time.Second).Add(time.Second), now.UTC().Truncate(time.Second).Add(2*time.Second)
	id1, id2 := TickID("s", tick1), TickID("s", tick2)
	_, err = a.initState(ctx, leaseA, "s", now, now)
	require.NoError(t, err)
	claimedA, err := a.claim(ctx, leaseA, "s", tick1, id1, now)
	require.NoError(t, err, "the holder claims a tick")

	// a pauses past its expiry; b takes over.
	later := leaseA.Expiry.Add(time.Millisecond)
	leaseB, err := b.acquire(ctx, "b", &held, later, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(2), leaseB.Token, "the token grows at the takeover")

	_, err = a.renew(ctx, leaseA, later, 5*time.Second)
	require.ErrorIs(t, err, ErrFenced, "the old holder cannot renew")
	_, err = a.claim(ctx, leaseA, "s", tick2, id2, later)
	require.ErrorIs(t, err, ErrFenced, "the old holder cannot claim a tick")
	_, err = a.reclaim(ctx, leaseA, "s", claimedA, later)
	require.ErrorIs(t, err, ErrFenced, "nor re-claim its own")
	require.NoError(t, a.release(ctx, leaseA, later), "releasing a lease no longer held changes nothing")

	stateB, found, err := b.readState(ctx, "s")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, tickState{tick: tick1, tickID: id1, token: 1, sends: 1}, stateB, "the claimed, unsent tick")
	_, err = b.claim(ctx, leaseB, "s", tick2, id2, later)
	require.ErrorIs(t, err, errStateMoved, "tick1 is claimed and unsent: it comes first")
	claimed, err := b.reclaim(ctx, leaseB, "s", stateB, later)
	require.NoError(t, err, "the new holder re-claims the unsent tick")
	assert.Equal(t, 2, claimed.sends)
	_, err = a.markSent(ctx, "s", claimedA, "m-a", later)
	require.ErrorIs(t, err, errStateMoved, "the old holder cannot record a tick claimed again under a later token")
	_, err = b.markSent(ctx, "s", claimed, "m-1", later)
	require.NoError(t, err)
	_, err = b.reclaim(ctx, leaseB, "s", claimed, later)
	require.ErrorIs(t, err, errStateMoved, "a sent tick is never claimed again")
	_, err = b.claim(ctx, leaseB, "s", tick1, id1, later)
	require.ErrorIs(t, err, errStateMoved, "nor claimed as a new one")
	_, err = b.claim(ctx, leaseB, "s", tick2, id2, later)
	require.NoError(t, err)

	held, _, err = b.readLease(ctx)
	require.NoError(t, err)
	assert.Equal(t, Lease{Name: "test", Owner: "b", Token: 2, Expiry: millis(leaseB.Expiry.UnixMilli()), Acquired: millis(later.UnixMilli())}, held)

	// A lease that lapsed without a takeover cannot be renewed either.
	expired := leaseB.Expiry.Add(time.Millisecond)
	_, err = b.renew(ctx, leaseB, expired, 5*time.Second)
	require.ErrorIs(t, err, ErrFenced)
}

// eventLog collects a scheduler's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) ObserveScheduler(_ context.Context, ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) of(kind EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func startScheduler(t *testing.T, config Config, schedules ...Schedule) *Scheduler {
	t.Helper()
	cfg := testenv.AWSConfig(t)
	if config.Logger == nil {
		config.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := New(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), config, schedules)
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// A schedule whose last tick lies 90 s back (no leader ran since): with catch_up 3 and
// MissedAfter 30 s, the last tick due before the leader took over is on time, the three
// missed ticks before it are caught up, the older ones reported skipped; every tick after
// the last one is accounted for once. Each message carries the job type, the tick id as
// idempotency key, and the payload.
func TestEmulatorMissedTicksSkippedBeyondCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	// A 5 s period: every tick until the first on-time one costs DynamoDB calls (3 caught
	// up plus those of the last MissedAfter), and at 2 s a busy serialized emulator could
	// take longer per tick than the period, so the scheduler never came level (seen in CI).
	const period = 5 * time.Second
	baseline := time.Now().Truncate(period).Add(-90 * time.Second)
	item := itemKey(stateID("catch-up"))
	item[attrTick] = num(baseline.UnixMilli())
	item[attrToken] = num(1)
	item[attrSent] = &types.AttributeValueMemberBOOL{Value: true}
	_, err := dynamo.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)

	events := &eventLog{}
	queueName := queue.URL[strings.LastIndex(queue.URL, "/")+1:] // resolved with GetQueueUrl
	startScheduler(t, Config{Table: table, LeaseDuration: 3 * time.Second, MissedAfter: 30 * time.Second, Observer: events},
		Schedule{Name: "catch-up", Cron: "@every 5s", JobType: "report", Payload: []byte(`{"n":1}`), Queue: queueName, CatchUp: 3})

	// Reaching an on-time tick takes the lease, the catch-up sends and their records: some
	// 20 DynamoDB calls. Against the serialized emulator on a busy machine a call can take
	// seconds, so the wait is derived from round trips measured now (a fixed minute ran out
	// twice under load).
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		_, err := dynamo.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: itemKey(stateID("catch-up"))})
		require.NoError(t, err)
		slowest = max(slowest, time.Since(begin))
	}
	started := time.Now()
	testenv.Eventually(t, max(time.Minute, 40*slowest), "a tick enqueued on time", func() bool {
		for _, ev := range events.of(EventTickEnqueued) {
			if ev.Tick.After(started) {
				return true
			}
		}
		return false
	})
	skips := events.of(EventTicksSkipped)
	require.Len(t, skips, 1)
	skip := skips[0]
	assert.Equal(t, baseline.Add(period).UTC(), skip.Tick, "the first missed tick")
	assert.Equal(t, int64(skip.LastSkipped.Sub(skip.Tick)/period)+1, skip.Skipped, "skipped counts every tick from first to last")

	var ticks []time.Time
	for _, ev := range events.of(EventTickEnqueued) {
		ticks = append(ticks, ev.Tick)
	}
	require.GreaterOrEqual(t, len(ticks), 4)
	assert.Equal(t, skip.LastSkipped.Add(period), ticks[0], "enqueuing goes on right after the skipped ticks")
	for i := 1; i < len(ticks); i++ {
		assert.Equal(t, ticks[i-1].Add(period), ticks[i], "ticks in order, none missing")
	}
	for _, tick := range ticks[:4] {
		assert.True(t, tick.Before(started), "the tick %s fell due before the leader took over", tick)
	}
	assert.WithinDuration(t, skip.Time, ticks[3], 30*time.Second, "the last tick due before the takeover, on time")
	resent := map[string]bool{} // a send that timed out on a loaded emulator is sent again
	for _, ev := range events.of(EventTickEnqueued) {
		resent[ev.TickID] = ev.Attempt > 1
	}

	received := map[string]sqstypes.Message{}
	testenv.Eventually(t, time.Minute, "every enqueued tick received", func() bool {
		out, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			key := aws.ToString(m.MessageAttributes[sqsworker.AttributeIdempotencyKey].StringValue)
			_, again := received[key]
			assert.False(t, again && !resent[key], "tick %s, sent once, received twice", key)
			received[key] = m
		}
		return len(received) >= len(ticks)
	})
	for _, tick := range ticks {
		m, ok := received[TickID("catch-up", tick)]
		require.True(t, ok, "tick %s received", tick)
		assert.Equal(t, `{"n":1}`, aws.ToString(m.Body))
		assert.Equal(t, "report", aws.ToString(m.MessageAttributes[sqsworker.AttributeJobType].StringValue))
	}
}

// On a FIFO queue the tick id is the deduplication id and the schedule's name the
// message group; the status shows the last tick and the leader.
func TestEmulatorFIFOTickCarriesDeduplicationID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{FIFO: true})
	table := testenv.NewTable(t, dynamo)
	events := &eventLog{}
	schedule := Schedule{Name: "fifo", Cron: "@every 1s", JobType: "sync", Queue: queue.URL}
	s := startScheduler(t, Config{Table: table, LeaseDuration: 30 * time.Second, Observer: events}, schedule)
	testenv.Eventually(t, time.Minute, "a tick enqueued", func() bool { return len(events.of(EventTickEnqueued)) > 0 })
	first := events.of(EventTickEnqueued)[0]

	var message sqstypes.Message
	testenv.Eventually(t, time.Minute, "the tick's message", func() bool {
		out, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return false
		}
		message = out.Messages[0]
		return true
	})
	assert.Equal(t, first.TickID, message.Attributes["MessageDeduplicationId"])
	assert.Equal(t, "fifo", message.Attributes["MessageGroupId"])
	assert.Equal(t, first.MessageID, aws.ToString(message.MessageId))

	status, err := ReadStatus(ctx, dynamo, table, "", []Schedule{schedule}, time.Now())
	require.NoError(t, err)
	require.NotNil(t, status.Leader)
	assert.Equal(t, s.Owner(), status.Leader.Owner)
	assert.True(t, status.LeaderAlive)
	require.Len(t, status.Schedules, 1)
	assert.NotEmpty(t, status.Schedules[0].LastEnqueuedTick+status.Schedules[0].ClaimedTick)
}

// Shutdown releases the lease: a standby takes over at once (at its next look, within
// RenewInterval), with the next token, long before the lease would have lapsed.
func TestEmulatorShutdownHandsOverAtOnce(t *testing.T) {
	t.Parallel()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	schedule := Schedule{Name: "handover", Cron: "@every 1s", JobType: "t", Queue: queue.URL}
	config := Config{Table: table, LeaseDuration: time.Minute, RenewInterval: 2 * time.Second}
	first, second := &eventLog{}, &eventLog{}
	config.Observer, config.Owner = first, "first"
	leader := startScheduler(t, config, schedule)
	testenv.Eventually(t, time.Minute, "first leading", func() bool { return len(first.of(EventLeadershipGained)) == 1 })
	config.Observer, config.Owner = second, "second"
	startScheduler(t, config, schedule)
	testenv.Eventually(t, time.Minute, "first enqueuing", func() bool { return len(first.of(EventTickEnqueued)) > 0 })

	stopped := time.Now()
	require.NoError(t, leader.Shutdown(context.Background()))
	lost := first.of(EventLeadershipLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "shutdown", lost[0].Reason)
	testenv.Eventually(t, time.Minute, "second leading", func() bool { return len(second.of(EventLeadershipGained)) == 1 })
	gained := second.of(EventLeadershipGained)[0]
	assert.Equal(t, int64(2), gained.Token)
	assert.Less(t, gained.Time.Sub(stopped), 30*time.Second, "well before the 1-minute lease would lapse (RenewInterval bounds the standby's look)")

	// No tick twice across the handover.
	testenv.Eventually(t, time.Minute, "second enqueuing", func() bool { return len(second.of(EventTickEnqueued)) > 0 })
	var ids []string
	for _, ev := range append(first.of(EventTickEnqueued), second.of(EventTickEnqueued)...) {
		ids = append(ids, ev.TickID)
	}
	slices.Sort(ids)
	assert.Len(t, slices.Compact(slices.Clone(ids)), len(ids), "tick ids: %v", ids)
}

// seedDeadLeader writes what a leader that died mid-tick leaves behind: its lapsed lease
// (token 1) and the schedule's state with tick claimed but not recorded as sent.
func seedDeadLeader(t *testing.T, dynamo *dynamodb.Client, table, schedule string, tick time.Time) {
	t.Helper()
	ctx := context.Background()
	st := &store{client: dynamo, table: table, lease: DefaultLeaseName}
	now := time.Now()
	dead, err := st.acquire(ctx, "dead-leader", nil, now.Add(-time.Minute), time.Second)
	require.NoError(t, err)
	_, err = st.initState(ctx, dead, schedule, tick.Add(-time.Second), now.Add(-time.Minute))
	require.NoError(t, err)
	_, err = st.claim(ctx, dead, schedule, tick, TickID(schedule, tick), now.Add(-time.Minute))
	require.NoError(t, err)
}

// receiveTicks receives (and deletes) every message of queueURL until none is visible or
// in flight, and returns the message ids by tick id.
func receiveTicks(t *testing.T, client *sqs.Client, queueURL string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	byTick := map[string][]string{}
	testenv.Eventually(t, time.Minute, "the queue drained", func() bool {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			key := aws.ToString(m.MessageAttributes[sqsworker.AttributeIdempotencyKey].StringValue)
			byTick[key] = append(byTick[key], aws.ToString(m.MessageId))
			_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		visible, inFlight := testenv.Counts(t, client, queueURL)
		return len(out.Messages) == 0 && visible == 0 && inFlight == 0
	})
	return byTick
}

// A leader that died after claiming a tick and before sending it: the next leader takes
// the lease with a later token (2, or more after an emulator stall), claims the tick
// again and sends it, once.
func TestEmulatorLeaderDiedBeforeSendingTheTick(t *testing.T) {
	t.Parallel()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	tick := time.Date(time.Now().UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC) // the next one is a year away
	seedDeadLeader(t, dynamo, table, "yearly", tick)

	events := &eventLog{}
	s := startScheduler(t, Config{Table: table, LeaseDuration: 10 * time.Second, Observer: events},
		Schedule{Name: "yearly", Cron: "@yearly", JobType: "t", Queue: queue.URL})
	testenv.Eventually(t, time.Minute, "the claimed tick enqueued", func() bool { return len(events.of(EventTickEnqueued)) == 1 })
	require.NoError(t, s.Shutdown(context.Background()))

	enqueued := events.of(EventTickEnqueued)[0]
	assert.Equal(t, TickID("yearly", tick), enqueued.TickID)
	assert.GreaterOrEqual(t, enqueued.Token, int64(2), "sent under a later token than the dead leader's")
	assert.Equal(t, 2, enqueued.Attempt, "the dead leader's claim was the first")
	assert.Equal(t, map[string][]string{TickID("yearly", tick): {enqueued.MessageID}}, receiveTicks(t, sqsClient, queue.URL))
}

// flakyDynamoDB fails the first UpdateItem whose update expression starts with one of
// prefixes, once per prefix, as a DynamoDB that stalls would.
type flakyDynamoDB struct {
	*dynamodb.Client
	mu       sync.Mutex
	prefixes map[string]bool // prefix → already failed
}

func (f *flakyDynamoDB) UpdateItem(ctx context.Context, input *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	for prefix, failed := range f.prefixes {
		if !failed && strings.HasPrefix(aws.ToString(input.UpdateExpression), prefix) {
			f.prefixes[prefix] = true
			f.mu.Unlock()
			return nil, context.DeadlineExceeded
		}
	}
	f.mu.Unlock()
	return f.Client.UpdateItem(ctx, input, optFns...)
}

// A tick sent whose record could not be written: the leader records it on the next pass
// and does not send it again.
func TestEmulatorSentTickWhoseRecordFailedIsNotSentAgain(t *testing.T) {
	t.Parallel()
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	flaky := &flakyDynamoDB{Client: dynamo, prefixes: map[string]bool{
		"SET #sent = :true": false, // the scheduler's record of the tick
	}}
	events := &eventLog{}
	s, err := New(sqsClient, flaky, Config{Table: table, Observer: events, Logger: slog.New(slog.DiscardHandler)},
		[]Schedule{{Name: "every-2s", Cron: "@every 2s", JobType: "t", Queue: queue.URL}})
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	testenv.Eventually(t, time.Minute, "the first tick recorded", func() bool { return len(events.of(EventTickEnqueued)) >= 1 })
	require.NoError(t, s.Shutdown(context.Background()))

	first := events.of(EventTickEnqueued)[0]
	only := func(kind EventKind) []Event {
		var out []Event
		for _, ev := range events.of(kind) {
			if ev.TickID == first.TickID {
				out = append(out, ev)
			}
		}
		return out
	}
	require.Len(t, events.of(EventTickFailed), 1, "the record failed once")
	assert.Equal(t, first.TickID, events.of(EventTickFailed)[0].TickID)
	assert.Len(t, only(EventTickClaimed), 1, "claimed once, sent once")
	assert.Len(t, only(EventTickEnqueued), 1)
	assert.Equal(t, 1, first.Attempt)
	received := receiveTicks(t, sqsClient, queue.URL)
	assert.Equal(t, []string{first.MessageID}, received[first.TickID])
	assert.Len(t, received, len(events.of(EventTickEnqueued)), "every later tick once too")
}
