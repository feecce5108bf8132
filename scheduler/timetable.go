package scheduler

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads the expressions: an optional seconds field, five standard fields, and
// the descriptors (@every, @daily, ...).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// timetable computes a schedule's ticks.
type timetable struct {
	spec  cron.Schedule
	every time.Duration // for @every: ticks on multiples of it since the epoch
}

// compile parses the schedule's expression in its time zone.
func (s Schedule) compile() (timetable, error) {
	expression := strings.TrimSpace(s.Cron)
	if expression == "" {
		return timetable{}, errors.New("cron is empty")
	}
	if strings.HasPrefix(expression, "TZ=") || strings.HasPrefix(expression, "CRON_TZ=") {
		return timetable{}, errors.New("cron: set the time zone in time_zone, not in the expression")
	}
	zone := s.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return timetable{}, fmt.Errorf("time_zone %q: %w", s.TimeZone, err)
	}
	spec, err := parser.Parse("CRON_TZ=" + zone + " " + expression)
	if err != nil {
		return timetable{}, fmt.Errorf("cron %q: %w", s.Cron, err)
	}
	table := timetable{spec: spec}
	if every, ok := spec.(cron.ConstantDelaySchedule); ok {
		table.every = every.Delay
	}
	return table, nil
}

// next returns the first tick strictly after t (zero when none within five years).
func (tt timetable) next(t time.Time) time.Time {
	if tt.every > 0 {
		step := int64(tt.every / time.Second)
		return time.Unix(floorDiv(t.Unix(), step)*step+step, 0).UTC()
	}
	if spec, ok := tt.spec.(*cron.SpecSchedule); ok && wallClock(spec) {
		return wallNext(spec, t)
	}
	return tt.spec.Next(t).UTC()
}

// count returns the number of ticks in (from, to]. Its cost does not grow with the
// number of ticks: arithmetic for @every; for cron expressions one step per day that has
// ticks (the ticks of a whole day with one UTC offset are the product of its hours,
// minutes and seconds), and a walk through partial days and days with a DST change.
func (tt timetable) count(from, to time.Time) int64 {
	if !to.After(from) {
		return 0
	}
	if tt.every > 0 {
		step := int64(tt.every / time.Second)
		return floorDiv(to.Unix(), step) - floorDiv(from.Unix(), step)
	}
	spec, ok := tt.spec.(*cron.SpecSchedule)
	if !ok { // not produced by the parser; walk
		var n int64
		for t := tt.next(from); !t.IsZero() && !t.After(to); t = tt.next(t) {
			n++
		}
		return n
	}
	perDay := int64(fieldCount(spec.Second) * fieldCount(spec.Minute) * fieldCount(spec.Hour))
	var n int64
	t := from
	for {
		tick := tt.next(t)
		if tick.IsZero() || tick.After(to) {
			return n
		}
		dayStart, dayEnd := localDay(tick, spec.Location)
		if t.Before(dayStart) && !dayEnd.After(to) && wholeDay(dayStart, dayEnd) {
			n += perDay
			t = dayEnd.Add(-time.Nanosecond)
			continue
		}
		for ; !tick.IsZero() && !tick.After(to) && tick.Before(dayEnd); tick = tt.next(tick) {
			n++
			t = tick
		}
		if tick.IsZero() || tick.After(to) {
			return n
		}
	}
}

// starBit is robfig/cron's mark of a field written as "*" (not a time).
const starBit = 1 << 63

// fieldCount is the number of values a cron field's bit set allows.
func fieldCount(field uint64) int { return bits.OnesCount64(field &^ starBit) }

// localDay returns the first instant of t's local day in loc and the first instant of
// the next. A midnight that does not exist (a DST change at 00:00) is the instant of the
// change: Go's time.Date would place it an hour early, in the day before.
func localDay(t time.Time, loc *time.Location) (start, end time.Time) {
	local := t.In(loc)
	year, month, day := local.Date()
	return midnight(year, month, day, loc), midnight(year, month, day+1, loc)
}

// midnight is the first instant of a local day.
func midnight(year int, month time.Month, day int, loc *time.Location) time.Time {
	t := time.Date(year, month, day, 0, 0, 0, 0, loc)
	if t.Day() != time.Date(year, month, day, 12, 0, 0, 0, loc).Day() { // placed in the day before
		_, t = t.ZoneBounds()
	}
	return t
}

// wholeDay reports whether the local day [start, end) begins at 00:00:00 and keeps one
// UTC offset throughout, so every combination of its hours, minutes and seconds occurs
// exactly once.
func wholeDay(start, end time.Time) bool {
	if start.Hour() != 0 || start.Minute() != 0 || start.Second() != 0 {
		return false // midnight did not exist that day
	}
	_, zoneEnd := start.ZoneBounds()
	return zoneEnd.IsZero() || !zoneEnd.Before(end)
}

// recent returns up to n of the most recent ticks in (from, to], oldest first, and the
// tick just before them in that range (zero when there is none). Its cost grows with n
// and the schedule's density near to, not with the length of the range.
func (tt timetable) recent(from, to time.Time, n int) (ticks []time.Time, before time.Time) {
	start := from
	if total := tt.count(from, to); total > int64(n)+1 {
		start = tt.startBefore(from, to, int64(n)+1, total)
	}
	ring := make([]time.Time, 0, n+1)
	for tick := tt.next(start); !tick.IsZero() && !tick.After(to); tick = tt.next(tick) {
		if len(ring) == n+1 {
			ring = append(ring[:0], ring[1:]...)
		}
		ring = append(ring, tick)
	}
	if len(ring) == n+1 {
		return ring[1:], ring[0]
	}
	return ring, time.Time{}
}

// maxWalk bounds the ticks recent walks through after startBefore narrowed the range.
const maxWalk = 1 << 16

// startBefore returns a time in [from, to) with at least want ticks in (start, to] and
// at most max(want, maxWalk)-ish more: it doubles a span back from to, then halves the
// interval where the count crossed want until few enough ticks remain to walk. total is
// count(from, to), more than want.
func (tt timetable) startBefore(from, to time.Time, want, total int64) time.Time {
	lo, loCount := from, total // count(lo, to) >= want
	hi := to                   // count(hi, to) < want
	for span := time.Minute; span < to.Sub(from); span *= 2 {
		start := to.Add(-span)
		c := tt.count(start, to)
		if c >= want {
			lo, loCount = start, c
			break
		}
		hi = start
	}
	for loCount > max(4*want, maxWalk) && hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if c := tt.count(mid, to); c >= want {
			lo, loCount = mid, c
		} else {
			hi = mid
		}
	}
	return lo
}

// floorDiv is a/b rounded toward minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
