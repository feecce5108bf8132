package scheduler_test

// Items the scheduler did not write, under its ids or under the keys its ticks used to
// depend on (issue 19 items 9 and 10), on a fake clock (testing/synctest) against moto:
// each is an error, logged, never taken for a lease or a pending tick, read again after
// a backoff; the other schedules go on.

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/scheduler"
)

// fakeEpoch is where a synctest bubble's clock starts.
var fakeEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// An idempotency record sits where the lease item belongs. In 6.5 s the standby reads
// it 3 times (at 0, 1 and 3 s: a backoff of 1 s, doubling) and logs each read as an
// error; it never writes the item nor takes it for a lease. Deleted, the item is taken
// as a fresh lease at the next read. Before the fix: 512 GetItem and 511 UpdateItem in
// 6 s (a loop that read the item as a lapsed lease of token 0 and lost every race for
// it), with no log line.
func TestMalformedLeaseIsLoggedAndNeverTaken(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	foreign := map[string]any{"id": "scheduler#lease#scheduler", "status": "COMPLETED", "expiration": 4102444800, "validation": "h"}
	putItem(t, dynamo, table, foreign)

	synctest.Test(t, func(t *testing.T) {
		sqsInBubble, dynamoInBubble := bubbleClients(cfg)
		calls := &countingDynamoDB{client: dynamoInBubble, limit: 200}
		logs := newLogRecorder(t)
		events := &observed{}
		s, err := scheduler.New(sqsInBubble, calls, scheduler.Config{
			Table: table, LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Observer: events, Logger: slog.New(logs),
		}, []scheduler.Schedule{{Name: "every-second", Cron: "@every 1s", JobType: "t", Queue: queue.URL}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) }) // inside the bubble, also when an assertion stops the test
		start := time.Now()
		require.NoError(t, s.Start(context.Background()))
		time.Sleep(6500 * time.Millisecond)
		synctest.Wait()

		reads := calls.find("GetItem", "scheduler#lease#")
		assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second}, since(start, reads), "reads of the lease item")
		for _, op := range []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"} {
			assert.Zero(t, calls.count(op, ""), "%s calls", op)
		}
		errorsLogged := logs.matching("scheduler: the lease item is not a lease")
		require.Len(t, errorsLogged, 3)
		for _, r := range errorsLogged {
			assert.Equal(t, slog.LevelError, r.level)
			assert.Contains(t, r.attrs["error"], `malformed item "scheduler#lease#scheduler"`)
			assert.Contains(t, r.attrs["error"], "attribute owner is missing")
		}
		assert.Empty(t, events.of(scheduler.EventLeadershipGained))

		// The operator deletes the item: the next read (at 7 s) finds no lease and takes it.
		_, err = dynamoInBubble.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table),
			Key: map[string]dynamodbtypes.AttributeValue{"id": &dynamodbtypes.AttributeValueMemberS{Value: "scheduler#lease#scheduler"}}})
		require.NoError(t, err)
		time.Sleep(time.Until(start.Add(7500 * time.Millisecond)))
		synctest.Wait()
		gained := events.of(scheduler.EventLeadershipGained)
		require.Len(t, gained, 1)
		assert.Equal(t, int64(1), gained[0].Token)
		assert.Equal(t, 7*time.Second, gained[0].Time.Sub(start))
		require.NoError(t, s.Shutdown(context.Background()))
	})
}

// A state item that is not the scheduler's (a tick time written as a string) under one
// schedule's id: that schedule's state is read 3 times in 6.5 s (0, 1, 3 s), each read
// an EventTickFailed matching ErrMalformedItem and an error line; nothing is written to
// it; the other schedule on the same leader enqueues each of its 6 ticks on time. Before
// the fix the broken schedule took a full core with no ticks (its tick time read as the
// year 1, a walk of a million ticks per pass, then a skip its condition refused, again).
func TestMalformedStateIsLoggedAndOtherSchedulesTick(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	putItem(t, dynamo, table, map[string]any{"id": "scheduler#schedule#broken", "tick_ms": "yesterday", "sent": true, "token": 1})

	synctest.Test(t, func(t *testing.T) {
		sqsInBubble, dynamoInBubble := bubbleClients(cfg)
		calls := &countingDynamoDB{client: dynamoInBubble, limit: 400}
		logs := newLogRecorder(t)
		events := &observed{}
		s, err := scheduler.New(sqsInBubble, calls, scheduler.Config{
			Table: table, LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Observer: events, Logger: slog.New(logs),
		}, []scheduler.Schedule{
			{Name: "broken", Cron: "@every 1s", JobType: "t", Queue: queue.URL},
			{Name: "healthy", Cron: "@every 1s", JobType: "t", Queue: queue.URL},
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) }) // inside the bubble, also when an assertion stops the test
		start := time.Now()
		require.NoError(t, s.Start(context.Background()))
		time.Sleep(6500 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, s.Shutdown(context.Background()))

		reads := calls.find("GetItem", "scheduler#schedule#broken")
		assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second}, since(start, reads), "reads of the broken state item")
		for _, op := range []string{"PutItem", "UpdateItem", "TransactWriteItems"} {
			assert.Zero(t, len(calls.find(op, "scheduler#schedule#broken")), "%s calls on the broken item", op)
		}
		var failed []scheduler.Event
		for _, ev := range events.of(scheduler.EventTickFailed) {
			if ev.Schedule == "broken" {
				failed = append(failed, ev)
				assert.True(t, errors.Is(ev.Err, scheduler.ErrMalformedItem), "%v", ev.Err)
			}
		}
		assert.Len(t, failed, 3)
		lines := logs.matching("scheduler: tick failed")
		require.Len(t, lines, 3)
		for _, r := range lines {
			assert.Equal(t, slog.LevelError, r.level)
			assert.Equal(t, "broken", r.attrs["schedule"])
			assert.Contains(t, r.attrs["error"], `attribute tick_ms is not a number`)
		}
		var healthy []time.Duration
		for _, ev := range events.of(scheduler.EventTickEnqueued) {
			assert.Equal(t, "healthy", ev.Schedule)
			healthy = append(healthy, ev.Tick.Sub(start))
			assert.Equal(t, ev.Tick, ev.Time, "on time: the fake clock does not move during calls")
		}
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second}, healthy)
	})
}

// Two standbys race for a lapsed lease and this one loses: it reads the lease again only
// after RenewInterval, not at once, and takes it when the winner's lease lapses. Before
// the fix it read the lease again at once (a lease that keeps being taken, or that reads
// as lapsed and cannot be taken, made that a loop without a pause).
func TestLostLeaseRaceBacksOff(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	lapsed := fakeEpoch.Add(-time.Second).UnixMilli()
	putItem(t, dynamo, table, map[string]any{"id": "scheduler#lease#scheduler", "owner": "old", "token": 5, "expiry_ms": lapsed, "acquired_ms": lapsed - 3000})

	synctest.Test(t, func(t *testing.T) {
		sqsInBubble, dynamoInBubble := bubbleClients(cfg)
		rivalWon := false
		calls := &countingDynamoDB{client: dynamoInBubble, limit: 200}
		calls.before = func(call dynamoCall) {
			if call.op != "UpdateItem" || rivalWon || call.expr != "#token = :seen AND #expiry <= :now" {
				return
			}
			rivalWon = true // the rival's takeover lands just before this one's
			now := time.Now().UnixMilli()
			putItem(t, dynamoInBubble, table, map[string]any{"id": "scheduler#lease#scheduler", "owner": "rival", "token": 6, "expiry_ms": now + 3000, "acquired_ms": now})
		}
		events := &observed{}
		s, err := scheduler.New(sqsInBubble, calls, scheduler.Config{
			Table: table, LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Observer: events, Logger: slog.New(newLogRecorder(t)),
		}, []scheduler.Schedule{{Name: "every-second", Cron: "@every 1s", JobType: "t", Queue: queue.URL}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) }) // inside the bubble, also when an assertion stops the test
		start := time.Now()
		require.NoError(t, s.Start(context.Background()))
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, s.Shutdown(context.Background()))

		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			since(start, calls.find("GetItem", "scheduler#lease#")), "reads of the lease: none right after the lost race")
		gained := events.of(scheduler.EventLeadershipGained)
		require.Len(t, gained, 1)
		assert.Equal(t, int64(7), gained[0].Token, "taken from the rival after its lease lapsed")
	})
}

// Someone else's item where a tick's unique key used to be ("unique#<tick id>", an
// idempotency record a sender can plant with that idempotency key when the middleware
// has no prefix) does not stop the tick: the scheduler no longer reserves unique keys.
// Before the fix the tick failed on every pass (the key read as pending) and the ticks
// behind it never came.
func TestForeignItemAtATicksUniqueKeyDoesNotStopIt(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	for second := 1; second <= 3; second++ {
		id := scheduler.TickID("every-second", fakeEpoch.Add(time.Duration(second)*time.Second))
		putItem(t, dynamo, table, map[string]any{"id": "unique#" + id, "status": "IN_PROGRESS", "expiration": 4102444800, "lease": "x"})
	}

	synctest.Test(t, func(t *testing.T) {
		sqsInBubble, dynamoInBubble := bubbleClients(cfg)
		events := &observed{}
		s, err := scheduler.New(sqsInBubble, &countingDynamoDB{client: dynamoInBubble, limit: 200}, scheduler.Config{
			Table: table, LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Observer: events, Logger: slog.New(newLogRecorder(t)),
		}, []scheduler.Schedule{{Name: "every-second", Cron: "@every 1s", JobType: "t", Queue: queue.URL}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) }) // inside the bubble, also when an assertion stops the test
		start := time.Now()
		require.NoError(t, s.Start(context.Background()))
		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, s.Shutdown(context.Background()))
		var ticks []time.Duration
		for _, ev := range events.of(scheduler.EventTickEnqueued) {
			ticks = append(ticks, ev.Tick.Sub(start))
		}
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}, ticks)
		assert.Empty(t, events.of(scheduler.EventTickFailed))
	})
}
