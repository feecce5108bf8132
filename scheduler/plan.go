package scheduler

import (
	"fmt"
	"time"
)

// plan is what one pass does with a schedule's due ticks.
type plan struct {
	// enqueue lists the ticks to enqueue, oldest first: the caught-up ones, then the
	// on-time ones.
	enqueue []time.Time
	// handoff is the on-time tick that fell due before the leader's term began (zero
	// when none): the tick of a leader handoff.
	handoff time.Time
	// missed counts the due ticks that are not on time; caughtUp of them are enqueued
	// (the most recent, at most CatchUp), skipped are not: firstMissed is the oldest,
	// lastSkipped the most recent skipped one, late how late the most recent missed one is.
	missed, skipped          int64
	caughtUp                 int
	firstMissed, lastSkipped time.Time
	late                     time.Duration
}

// planTicks decides what becomes of the ticks after last (the state's "done through")
// that are due at now (their time plus the schedule's jitter offset has come), in a
// leader term that began at termStart. A tick is on time when it is due within
// Config.MissedAfter (the grace period) and either fell due during the term, or is the
// last tick that fell due before the term began (so a leader handoff never loses a
// tick, whatever the policy). Every other due tick is missed: the schedule's CatchUp
// most recent missed ticks are enqueued, the others skipped. The cost does not grow
// with the number of missed ticks (see timetable.count).
func (s *Scheduler) planTicks(sc *compiled, last, now, termStart time.Time) plan {
	const instant = time.Nanosecond
	dueBy := now.Add(-sc.offset)
	lateEnd := now.Add(-s.config.MissedAfter - sc.offset - instant) // ticks up to here are late
	beforeTerm := termStart.Add(-sc.offset - instant)               // ticks up to here fell due before the term
	onTimeFrom := maxTime(lateEnd, beforeTerm)                      // ticks after this are on time
	var p plan
	missedEnd := onTimeFrom
	if start := maxTime(last, lateEnd); beforeTerm.After(start) {
		if ticks, _ := sc.table.recent(start, beforeTerm, 1); len(ticks) == 1 {
			p.handoff = ticks[0]
			missedEnd = p.handoff.Add(-instant)
		}
	}
	if missedEnd.After(last) {
		p.missed = sc.table.count(last, missedEnd)
	}
	if p.missed > 0 {
		caught, before := sc.table.recent(last, missedEnd, sc.CatchUp)
		p.enqueue = append(p.enqueue, caught...)
		p.caughtUp = len(caught)
		p.skipped = p.missed - int64(len(caught))
		p.lastSkipped = before
		p.firstMissed = sc.table.next(last)
		mostRecent := before
		if len(caught) > 0 {
			mostRecent = caught[len(caught)-1]
		}
		p.late = now.Sub(mostRecent.Add(sc.offset))
	}
	if !p.handoff.IsZero() {
		p.enqueue = append(p.enqueue, p.handoff)
	}
	for tick := sc.table.next(maxTime(last, onTimeFrom)); !tick.IsZero() && !tick.After(dueBy); tick = sc.table.next(tick) {
		p.enqueue = append(p.enqueue, tick)
	}
	return p
}

// policy names a schedule's missed-tick policy as logged: "skip" or "catch-up N".
func (sc *compiled) policy() string {
	if sc.CatchUp == 0 {
		return "skip"
	}
	return fmt.Sprintf("catch-up %d", sc.CatchUp)
}

// startDue reports whether a schedule with RunOnStart gets a start tick at now, at the
// start of a term in which this pass enqueued nothing: when its last enqueued tick is
// older than one interval (the tick after it fell due and was skipped), or it never
// enqueued one.
func (sc *compiled) startDue(state *tickState, now time.Time) bool {
	if !sc.RunOnStart || !state.sent {
		return false
	}
	if state.tickID == "" {
		return true
	}
	at, _, err := parseTickID(sc.Name, state.tickID)
	if err != nil { // checked when the state was read
		return false
	}
	next := sc.table.next(at)
	return !next.IsZero() && now.After(next.Add(sc.offset))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
