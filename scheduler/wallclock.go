package scheduler

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Daylight-saving rule. robfig/cron walks local time and has no tick at a wall time that
// does not exist (spring forward), two at one that occurs twice (fall back), and moves a
// tick at a midnight that does not exist by a year. The scheduler instead reads a
// schedule with listed hours (daily or coarser times, "0 2 * * *", "30 9 * * MON-FRI",
// "0 */6 * * *") as wall-clock slots, each resolved to one instant:
//   - a slot inside a spring-forward gap runs once, at the first instant after the gap;
//   - a slot that occurs twice at fall back runs once, at its first occurrence;
// so one local slot never makes two ticks, and never none. A schedule that runs every
// hour or more often ("*/30 * * * *", "0 * * * *") runs by elapsed time, as robfig/cron
// computes it: both occurrences of a repeated hour, none in a skipped one.

// maxWallDays bounds the search for a matching day (robfig/cron gives up after five years too).
const maxWallDays = 5 * 366

// wallClock reports whether spec's ticks are read as wall-clock slots: its hours are
// listed, not every hour of the day.
func wallClock(spec *cron.SpecSchedule) bool {
	return spec.Hour&starBit == 0 && fieldCount(spec.Hour) < 24
}

// wallNext returns the first slot of spec strictly after t, resolved by the rule above,
// or zero when none falls within five years.
func wallNext(spec *cron.SpecSchedule, t time.Time) time.Time {
	loc := spec.Location
	year, month, day := t.In(loc).Add(-24 * time.Hour).Date() // a slot of the day before may resolve after t
	for i := 0; i <= maxWallDays; i++ {
		date := time.Date(year, month, day+i, 12, 0, 0, 0, time.UTC)
		if !dayMatches(spec, date) {
			continue
		}
		for h := 0; h < 24; h++ {
			if spec.Hour&(1<<uint(h)) == 0 {
				continue
			}
			for m := 0; m < 60; m++ {
				if spec.Minute&(1<<uint(m)) == 0 {
					continue
				}
				for s := 0; s < 60; s++ {
					if spec.Second&(1<<uint(s)) == 0 {
						continue
					}
					if at := resolve(date.Year(), date.Month(), date.Day(), h, m, s, loc); at.After(t) {
						return at.UTC()
					}
				}
			}
		}
	}
	return time.Time{}
}

// dayMatches reports whether date (its year, month and day) is one of spec's days, with
// cron's rule for day of month and day of week: both must match when either is "*",
// either may match otherwise.
func dayMatches(spec *cron.SpecSchedule, date time.Time) bool {
	if spec.Month&(1<<uint(date.Month())) == 0 {
		return false
	}
	dom := spec.Dom&(1<<uint(date.Day())) != 0
	dow := spec.Dow&(1<<uint(date.Weekday())) != 0
	if spec.Dom&starBit != 0 || spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// resolve returns the instant of the local wall time in loc: its first occurrence when it
// occurs twice, the end of the gap when it does not occur.
func resolve(year int, month time.Month, day, hour, minute, second int, loc *time.Location) time.Time {
	wall := time.Date(year, month, day, hour, minute, second, 0, time.UTC)
	guess := time.Date(year, month, day, hour, minute, second, 0, loc)
	var first time.Time
	var offsetBefore int
	for i, probe := range []time.Time{guess.Add(-3 * time.Hour), guess, guess.Add(3 * time.Hour)} {
		_, offset := probe.Zone()
		if i == 0 {
			offsetBefore = offset
		}
		candidate := wall.Add(-time.Duration(offset) * time.Second)
		local := candidate.In(loc)
		if local.Year() == year && local.Month() == month && local.Day() == day &&
			local.Hour() == hour && local.Minute() == minute && local.Second() == second &&
			(first.IsZero() || candidate.Before(first)) {
			first = candidate
		}
	}
	if !first.IsZero() {
		return first
	}
	// In a gap: read with the offset before the change, the wall time lands after the
	// change; the zone that instant belongs to began at the gap's end.
	start, _ := wall.Add(-time.Duration(offsetBefore) * time.Second).In(loc).ZoneBounds()
	return start
}
