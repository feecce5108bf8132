package scheduler

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func times(t *testing.T, texts ...string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, text := range texts {
		out = append(out, utc(t, text))
	}
	return out
}

// Within a term (its leader took over long ago), ticks due within MissedAfter are all
// enqueued; of the later ones the CatchUp most recent are, the others are skipped.
func TestPlanAppliesTheMissedTickPolicyWithinATerm(t *testing.T) {
	last := utc(t, "2026-12-01T09:00:00Z")
	now := utc(t, "2026-12-01T09:00:21Z") // ticks at :02 ... :20 (10); :16 to :20 on time
	termStart := utc(t, "2026-12-01T08:00:00Z")
	cases := []struct {
		catchUp   int
		wantFirst string
		wantDue   int
		skipped   int64
	}{
		{catchUp: 0, wantFirst: "2026-12-01T09:00:16Z", wantDue: 3, skipped: 7},
		{catchUp: 2, wantFirst: "2026-12-01T09:00:12Z", wantDue: 5, skipped: 5},
		{catchUp: 20, wantFirst: "2026-12-01T09:00:02Z", wantDue: 10, skipped: 0},
	}
	for _, c := range cases {
		s := newTestScheduler(t, Schedule{Name: "s", Cron: "@every 2s", JobType: "t", Queue: "q", CatchUp: c.catchUp}, 5*time.Second)
		p := s.planTicks(&s.schedules[0], last, now, termStart)
		require.Len(t, p.enqueue, c.wantDue, "catch_up %d", c.catchUp)
		assert.Equal(t, c.wantFirst, p.enqueue[0].Format(time.RFC3339), "catch_up %d", c.catchUp)
		assert.Equal(t, "2026-12-01T09:00:20Z", p.enqueue[len(p.enqueue)-1].Format(time.RFC3339))
		assert.Equal(t, c.skipped, p.skipped, "catch_up %d", c.catchUp)
		assert.Equal(t, int64(7), p.missed)
		assert.True(t, p.handoff.IsZero())
		assert.Equal(t, "2026-12-01T09:00:02Z", p.firstMissed.Format(time.RFC3339))
		if c.skipped > 0 {
			assert.Equal(t, p.enqueue[0].Add(-2*time.Second), p.lastSkipped)
		}
	}
}

// At the start of a term, of the ticks that fell due before it only the last one is on
// time (when within MissedAfter): the others are missed, whatever their lateness.
func TestPlanAtATakeoverKeepsOnlyTheLastTickOnTime(t *testing.T) {
	last := utc(t, "2026-12-01T09:00:00Z")
	now := utc(t, "2026-12-01T09:00:21Z")
	for _, c := range []struct {
		catchUp int
		want    []time.Time
		skipped int64
	}{
		{0, times(t, "2026-12-01T09:00:20Z"), 9},
		{2, times(t, "2026-12-01T09:00:16Z", "2026-12-01T09:00:18Z", "2026-12-01T09:00:20Z"), 7},
	} {
		s := newTestScheduler(t, Schedule{Name: "s", Cron: "@every 2s", JobType: "t", Queue: "q", CatchUp: c.catchUp}, 5*time.Second)
		p := s.planTicks(&s.schedules[0], last, now, now.Add(-100*time.Millisecond))
		assert.Equal(t, c.want, p.enqueue, "catch_up %d", c.catchUp)
		assert.Equal(t, utc(t, "2026-12-01T09:00:20Z"), p.handoff)
		assert.Equal(t, int64(9), p.missed)
		assert.Equal(t, c.skipped, p.skipped)
	}
}

// CASES.md N16: a tick due during a leader handoff is enqueued by the next leader
// whatever the policy when it is late by less than the grace period (lease 10 s + renew
// 3 s = 13 s); a tick later than that follows the policy. Daily and minutely, policy
// skip.
func TestPlanHandoffGracePeriod(t *testing.T) {
	for _, cron := range []string{"0 10 * * *", "* * * * *"} {
		s, err := New(&sqs.Client{}, &dynamodb.Client{}, Config{Table: "t", LeaseDuration: 10 * time.Second, RenewInterval: 3 * time.Second},
			[]Schedule{{Name: "s", Cron: cron, JobType: "t", Queue: "q"}})
		require.NoError(t, err)
		require.Equal(t, time.Minute, s.config.MissedAfter)
		s.config.MissedAfter = 13 * time.Second // the proposal's grace: lease + renew interval
		sc := &s.schedules[0]
		tick := utc(t, "2026-12-01T10:00:00Z")
		last := utc(t, "2026-12-01T09:59:00Z")
		for _, takeover := range []string{"2026-12-01T10:00:00.7Z", "2026-12-01T10:00:09Z"} {
			at := utc(t, takeover)
			p := s.planTicks(sc, last, at.Add(50*time.Millisecond), at)
			assert.Equal(t, []time.Time{tick}, p.enqueue, "%s: taken over at %s", cron, takeover)
			assert.Equal(t, tick, p.handoff)
			assert.Zero(t, p.missed)
		}
		late := utc(t, "2026-12-01T10:00:13.5Z")
		p := s.planTicks(sc, last, late, late)
		assert.Empty(t, p.enqueue, "%s: later than the grace period, policy skip", cron)
		assert.Equal(t, int64(1), p.missed)
		assert.Equal(t, int64(1), p.skipped)
		assert.Equal(t, tick, p.lastSkipped)
		assert.Equal(t, 13500*time.Millisecond, p.late)
	}
}

// CASES.md N19 B: @every 5s with catch-up 1 after 14 days down: one caught-up tick and
// the on-time one (the last due before the takeover), 241,918 skipped, counted without
// walking them.
func TestPlanAfterFourteenDaysDown(t *testing.T) {
	s := newTestScheduler(t, Schedule{Name: "B", Cron: "@every 5s", JobType: "t", Queue: "q", CatchUp: 1}, 13*time.Second)
	last := utc(t, "2026-12-01T00:00:00Z")
	now := last.Add(14*24*time.Hour + 2*time.Second)
	p := s.planTicks(&s.schedules[0], last, now, now)
	back := last.Add(14 * 24 * time.Hour)
	assert.Equal(t, []time.Time{back.Add(-5 * time.Second), back}, p.enqueue)
	assert.Equal(t, back, p.handoff)
	assert.Equal(t, int64(241919), p.missed, "14 days / 5 s = 241,920 ticks, the last on time")
	assert.Equal(t, 1, p.caughtUp)
	assert.Equal(t, int64(241918), p.skipped)
	assert.Equal(t, back.Add(-10*time.Second), p.lastSkipped)
	assert.Equal(t, last.Add(5*time.Second), p.firstMissed)
	assert.Equal(t, "catch-up 1", s.schedules[0].policy())

	// The same for a cron expression every second: a million ticks, counted by day.
	s = newTestScheduler(t, Schedule{Name: "C", Cron: "* * * * * *", TimeZone: "Europe/London", JobType: "t", Queue: "q", CatchUp: 3}, 13*time.Second)
	takeover := now.Add(500 * time.Millisecond)
	p = s.planTicks(&s.schedules[0], last, takeover, takeover)
	assert.Equal(t, int64(14*24*3600+2-1), p.missed, "every second but the last, which is on time")
	assert.Equal(t, []time.Time{now.Add(-3 * time.Second), now.Add(-2 * time.Second), now.Add(-time.Second), now}, p.enqueue)
	assert.Equal(t, now, p.handoff)
}

// Jitter delays a tick's due time by the schedule's fixed offset; its id keeps the
// scheduled time.
func TestPlanWaitsForTheJitterOffset(t *testing.T) {
	s := newTestScheduler(t, Schedule{Name: "shared", Cron: "@every 1m", JobType: "t", Queue: "q", Jitter: Duration(30 * time.Second)}, time.Minute)
	offset := s.schedules[0].offset
	tick := utc(t, "2026-12-01T09:01:00Z")
	termStart := utc(t, "2026-12-01T08:00:00Z")
	p := s.planTicks(&s.schedules[0], utc(t, "2026-12-01T09:00:00Z"), tick.Add(offset-time.Millisecond), termStart)
	assert.Empty(t, p.enqueue, "not due before its offset %s", offset)
	p = s.planTicks(&s.schedules[0], utc(t, "2026-12-01T09:00:00Z"), tick.Add(offset), termStart)
	assert.Equal(t, []time.Time{tick}, p.enqueue)
}
