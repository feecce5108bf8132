package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkCount counts the ticks in (from, to] one by one: the reference count.
func walkCount(tt timetable, from, to time.Time) int64 {
	var n int64
	for t := tt.next(from); !t.IsZero() && !t.After(to); t = tt.next(t) {
		n++
	}
	return n
}

// count agrees with walking tick by tick for every kind of expression, across DST
// changes (both directions, a zone whose midnight is skipped, a 30-minute offset) and
// ranges that start and end mid-day.
func TestCountAgreesWithWalking(t *testing.T) {
	specs := []string{"* * * * *", "*/7 * * * *", "30 2 * * *", "30 1 * * *", "0 0 * * *", "0 * * * *",
		"15,45 */3 * * MON-FRI", "0 9 1 * *", "*/20 * * * * *", "0 0 4 11 *", "@every 7s", "@every 1h", "@weekly"}
	zones := []string{"UTC", "America/Los_Angeles", "Europe/London", "America/Sao_Paulo", "Asia/Kolkata", "Australia/Lord_Howe"}
	ranges := [][2]string{
		{"2025-03-07T13:17:05Z", "2025-03-12T04:00:00Z"}, // US spring forward
		{"2025-10-31T23:59:59Z", "2025-11-04T11:11:11Z"}, // US fall back
		{"2026-10-24T12:00:00Z", "2026-10-26T12:00:01Z"}, // UK fall back
		{"2018-11-02T00:00:00Z", "2018-11-06T00:00:00Z"}, // Sao Paulo: no midnight on 4 November
		{"2025-04-05T00:00:00Z", "2025-04-07T00:00:00Z"}, // Lord Howe: a 30-minute change
		{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"}, // empty
		{"2026-01-01T10:00:00Z", "2026-01-01T10:00:30Z"}, // under a minute
		{"2025-12-20T06:30:00Z", "2026-01-20T18:45:00Z"}, // a month
	}
	for _, spec := range specs {
		for _, zone := range zones {
			tt, err := Schedule{Cron: spec, TimeZone: zone}.compile()
			require.NoError(t, err)
			for _, r := range ranges {
				from, to := utc(t, r[0]), utc(t, r[1])
				assert.Equal(t, walkCount(tt, from, to), tt.count(from, to), "%s in %s over %s", spec, zone, r)
			}
		}
	}
}

// recent returns the n most recent ticks of a range and the one before them, however
// long the range, and walks few ticks to find them.
func TestRecentTicks(t *testing.T) {
	tt, err := Schedule{Cron: "* * * * * *", TimeZone: "Europe/Berlin"}.compile()
	require.NoError(t, err)
	from, to := utc(t, "2026-01-01T00:00:00Z"), utc(t, "2026-03-01T00:00:00Z")
	ticks, before := tt.recent(from, to, 3)
	assert.Equal(t, []time.Time{to.Add(-2 * time.Second), to.Add(-time.Second), to}, ticks)
	assert.Equal(t, to.Add(-3*time.Second), before)
	ticks, before = tt.recent(from, from.Add(2*time.Second), 3)
	assert.Equal(t, []time.Time{from.Add(time.Second), from.Add(2 * time.Second)}, ticks)
	assert.True(t, before.IsZero())
	ticks, before = tt.recent(from, to, 0)
	assert.Empty(t, ticks)
	assert.Equal(t, to, before)
}

// Counting the missed ticks of 14 days costs one step per day, walking them one per
// tick: go test -run XXX -bench Count ./scheduler compares the two in one run.
func BenchmarkCountFourteenDays(b *testing.B) {
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(14 * 24 * time.Hour)
	for _, spec := range []string{"* * * * * *", "* * * * *", "0 10 * * *"} {
		tt, err := Schedule{Cron: spec, TimeZone: "Europe/Berlin"}.compile()
		require.NoError(b, err)
		b.Run("count/"+spec, func(b *testing.B) {
			for b.Loop() {
				tt.count(from, to)
			}
		})
		b.Run("walk/"+spec, func(b *testing.B) {
			for b.Loop() {
				walkCount(tt, from, to)
			}
		})
	}
}
