package scheduler_test

// CASES.md N19 on a fake clock (testing/synctest) against the emulators: the next run
// follows from the last recorded tick, not from the process's start; catch-up after a
// long downtime is bounded and reported in one log line with the counts; run-on-start
// fires only when the last tick is older than one interval.

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/scheduler"
)

// N19 A: a weekly schedule (Sunday 00:00 UTC) whose leader restarts every 2 days for 4
// weeks ticks exactly 4 times, each at its Sunday midnight: a restart does not move the
// next run (a schedule state kept in memory would never reach a week).
func TestWeeklyScheduleAcrossRestartsEveryTwoDays(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	synctest.Test(t, func(t *testing.T) {
		// An hour's lease (renewed every 20 minutes) keeps four weeks to some 2,000 calls.
		f := newFleet(t, cfg, scheduler.Config{Table: table, LeaseDuration: time.Hour},
			scheduler.Schedule{Name: "A", Cron: "@weekly", JobType: "weekly", Queue: queue.URL})
		begin := at("2026-12-02T12:00:00Z") // a Wednesday
		sleepUntil(begin)
		for restart := range 14 {
			r := f.start(fmt.Sprintf("r%d", restart+1))
			sleepUntil(begin.Add(time.Duration(restart+1) * 48 * time.Hour))
			r.stop(t)
			sleepUntil(time.Now().Add(10 * time.Minute)) // the restart takes ten minutes
		}
		var ticks, lateness []string
		for _, evs := range f.enqueued() {
			require.Len(t, evs, 1)
			ticks = append(ticks, evs[0].Tick.Format(time.RFC3339))
			lateness = append(lateness, evs[0].Time.Sub(evs[0].Tick).String())
		}
		assert.ElementsMatch(t, []string{"2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", "2026-12-20T00:00:00Z", "2026-12-27T00:00:00Z"}, ticks)
		assert.Equal(t, []string{"0s", "0s", "0s", "0s"}, lateness, "each on time")
		assert.Empty(t, f.all(scheduler.EventTicksSkipped))
	})
}

// N19 B: @every 5s with catch-up 1, the scheduler down for 14 days. On its return it
// enqueues the last tick due (on time: within the grace period) and one caught-up tick,
// skips the other 241,918 (14 days / 5 s = 241,920 ticks), reports that in one log line,
// and then goes on every 5 s: never more than 2 ticks at once.
func TestFourteenDaysDownCatchesUpOnce(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, cfg, scheduler.Config{Table: table},
			scheduler.Schedule{Name: "B", Cron: "@every 5s", JobType: "b", Queue: queue.URL, CatchUp: 1})
		sleepUntil(at("2026-12-01T00:00:00Z"))
		first := f.start("r1")
		sleepUntil(at("2026-12-01T00:00:22Z")) // ticks at :05 to :20
		first.stop(t)
		back := at("2026-12-15T00:00:22Z")
		sleepUntil(back)
		second := f.start("r2")
		sleepUntil(back.Add(9 * time.Second)) // and the ticks at :25 and :30

		missed := second.logs.matching("scheduler: missed ticks")
		require.Len(t, missed, 1, "one line")
		assert.Equal(t, map[string]string{"schedule": "B", "missed": "241919", "enqueued": "1", "skipped": "241918", "policy": "catch-up 1"},
			pick(missed[0].attrs, "schedule", "missed", "enqueued", "skipped", "policy"), "the last tick due, 00:00:20, is on time")
		skipped := second.events.of(scheduler.EventTicksSkipped)
		require.Len(t, skipped, 1)
		assert.Equal(t, int64(241918), skipped[0].Skipped)
		assert.Equal(t, at("2026-12-01T00:00:25Z"), skipped[0].Tick)
		assert.Equal(t, at("2026-12-15T00:00:10Z"), skipped[0].LastSkipped)

		// By the second of the bubble's clock: an SDK retry (after a lost answer on a loaded
		// emulator) sleeps its backoff on that clock, which is not the scheduler's lateness
		// (seen once in CI: the 00:00:20 tick enqueued at 00:00:22.020, 20 ms of the
		// bubble's time during one enqueue, most likely such a backoff).
		byTime := map[time.Time][]string{}
		for _, ev := range second.events.of(scheduler.EventTickEnqueued) {
			whole := ev.Time.Truncate(time.Second)
			byTime[whole] = append(byTime[whole], ev.Tick.Format(time.TimeOnly))
		}
		assert.Equal(t, map[time.Time][]string{
			back:                      {"00:00:15", "00:00:20"}, // caught up, then the on-time one
			back.Add(3 * time.Second): {"00:00:25"},
			back.Add(8 * time.Second): {"00:00:30"},
		}, byTime)
	})
}

// N19 C: @hourly with run_on_start. Restarted 10 minutes after a tick: no start tick.
// Restarted 2 hours 10 minutes after the last tick (11:00 and 12:00 missed and skipped):
// one start tick with its own id, C/start-<instant>, then the regular 13:00 tick.
func TestRunOnStartOnlyWhenTheLastTickIsOlderThanAnInterval(t *testing.T) {
	t.Parallel()
	cfg := testenv.AWSConfig(t)
	sqsClient, dynamo := testenv.SQS(t), testenv.DynamoDB(t)
	queue := testenv.NewQueue(t, sqsClient, testenv.QueueOptions{})
	table := testenv.NewTable(t, dynamo)
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, cfg, scheduler.Config{Table: table},
			scheduler.Schedule{Name: "C", Cron: "@hourly", JobType: "c", Queue: queue.URL, RunOnStart: true})
		sleepUntil(at("2026-12-01T09:59:30Z"))
		r := f.start("r1")
		synctest.Wait()
		sleepUntil(at("2026-12-01T10:05:00Z"))
		r.stop(t)
		first := r.events.of(scheduler.EventTickEnqueued)
		require.Len(t, first, 2, "the first start ever (no tick yet), then 10:00")
		assert.Equal(t, scheduler.StartTickID("C", at("2026-12-01T09:59:30Z")), first[0].TickID)
		assert.Equal(t, "C/start-2026-12-01T09:59:30Z", first[0].TickID)
		assert.Equal(t, scheduler.TickID("C", at("2026-12-01T10:00:00Z")), first[1].TickID)

		sleepUntil(at("2026-12-01T10:10:00Z"))
		r = f.start("r2")
		sleepUntil(at("2026-12-01T10:15:00Z"))
		r.stop(t)
		assert.Empty(t, r.events.of(scheduler.EventTickEnqueued), "10 minutes after a tick: no start tick")

		sleepUntil(at("2026-12-01T12:10:00Z"))
		r = f.start("r3")
		sleepUntil(at("2026-12-01T13:00:30Z"))
		var ids []string
		for _, ev := range r.events.of(scheduler.EventTickEnqueued) {
			ids = append(ids, ev.TickID)
		}
		assert.Equal(t, []string{"C/start-2026-12-01T12:10:00Z", "C/2026-12-01T13:00:00Z"}, ids)
		skipped := r.events.of(scheduler.EventTicksSkipped)
		require.Len(t, skipped, 1)
		assert.Equal(t, int64(2), skipped[0].Skipped, "11:00 and 12:00")
		assert.Len(t, r.logs.matching("scheduler: start tick enqueued"), 1)
	})
}
