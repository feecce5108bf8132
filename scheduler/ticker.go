package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// A schedule whose pass failed backs off (Scheduler.backoff) up to maxRetryInterval for
// a malformed item. A state item that changed under the leader is read again at once,
// at most maxMoved times in a row.
const (
	maxRetryInterval = time.Minute
	maxMoved         = 2
)

// term is what the ticker knows during one leader term (one fencing token).
type term struct {
	token   int64
	states  map[string]*tickState // the schedules' state items, read at the term's start
	started map[string]bool       // schedules whose first pass of the term went through
}

// runTicker enqueues due ticks while this replica holds the lease, until stop.
func (s *Scheduler) runTicker(ctx context.Context) {
	var tm *term
	for {
		changed := s.lead.changes()
		lease, ok := s.lead.current(time.Now())
		if !ok {
			if !s.wait(s.config.RenewInterval, changed) {
				return
			}
			continue
		}
		if tm == nil || lease.Token != tm.token { // a new term reads the states again
			tm = &term{token: lease.Token, states: map[string]*tickState{}, started: map[string]bool{}}
		}
		next := time.Now().Add(s.config.RenewInterval)
		for i := range s.schedules {
			if s.stopped() {
				return
			}
			next = minTime(next, s.tickSchedule(ctx, lease, &s.schedules[i], tm))
		}
		if !s.wait(time.Until(next), changed) {
			return
		}
	}
}

// tickSchedule enqueues the schedule's due ticks and returns when to come back.
func (s *Scheduler) tickSchedule(ctx context.Context, lease Lease, sc *compiled, tm *term) time.Time {
	if time.Now().Before(sc.retryAt) {
		return sc.retryAt // backing off after a failure
	}
	state, err := s.loadState(ctx, lease, sc.Name, tm)
	if err != nil {
		return s.failed(ctx, lease, sc, tm, Event{Schedule: sc.Name}, err)
	}
	resent := !state.sent
	if resent { // claimed before (by this term, an earlier one or a replica that died) and not recorded
		if err := s.enqueue(ctx, lease, sc, tm, state.tick, state.tickID); err != nil {
			return s.failed(ctx, lease, sc, tm, s.tickEvent(lease, sc, state.tick, state.tickID), err)
		}
	}
	now := time.Now()
	p := s.planTicks(sc, tm.states[sc.Name].tick, now, lease.Acquired)
	if p.missed > 0 {
		s.logger.Warn("scheduler: missed ticks", "schedule", sc.Name, "missed", p.missed, "enqueued", p.caughtUp,
			"skipped", p.skipped, "policy", sc.policy(), "first", p.firstMissed, "late", p.late.Round(time.Millisecond))
	}
	if p.skipped > 0 {
		skippedState, err := s.store.skip(ctx, lease, sc.Name, *tm.states[sc.Name], p.lastSkipped, time.Now())
		if err != nil {
			return s.failed(ctx, lease, sc, tm, Event{Schedule: sc.Name}, err)
		}
		tm.states[sc.Name] = &skippedState
		s.emit(ctx, Event{
			Kind: EventTicksSkipped, Token: lease.Token, Schedule: sc.Name, TickID: TickID(sc.Name, p.firstMissed),
			Tick: p.firstMissed, Skipped: p.skipped, LastSkipped: p.lastSkipped, Queue: sc.queueURL,
		})
	}
	for _, tick := range p.enqueue {
		id := TickID(sc.Name, tick)
		if err := s.enqueue(ctx, lease, sc, tm, tick, id); err != nil {
			return s.failed(ctx, lease, sc, tm, s.tickEvent(lease, sc, tick, id), err)
		}
		if tick.Equal(p.handoff) {
			s.logger.Info("scheduler: tick enqueued late (leader handoff)", "schedule", sc.Name, "tick_id", id,
				"late", time.Since(tick.Add(sc.offset)).Round(100*time.Millisecond), "token", lease.Token)
		}
	}
	if !tm.started[sc.Name] && !resent && len(p.enqueue) == 0 && sc.startDue(tm.states[sc.Name], now) {
		at := maxTime(now, tm.states[sc.Name].tick.Add(time.Millisecond)) // after the state's "done through"
		id := StartTickID(sc.Name, at)
		if err := s.enqueue(ctx, lease, sc, tm, at, id); err != nil {
			return s.failed(ctx, lease, sc, tm, s.tickEvent(lease, sc, at, id), err)
		}
		s.logger.Info("scheduler: start tick enqueued (run on start: the last tick is older than one interval)", "schedule", sc.Name, "tick_id", id)
	}
	tm.started[sc.Name] = true
	sc.failures, sc.moved = 0, 0
	if next := sc.table.next(tm.states[sc.Name].tick); !next.IsZero() {
		return next.Add(sc.offset)
	}
	return time.Now().Add(s.config.RenewInterval)
}

// loadState returns the schedule's state as this term knows it, reading it (or writing
// its baseline: ticks start after now) at the term's first pass.
func (s *Scheduler) loadState(ctx context.Context, lease Lease, name string, tm *term) (*tickState, error) {
	if state := tm.states[name]; state != nil {
		return state, nil
	}
	state, found, err := s.store.readState(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		now := time.Now()
		if state, err = s.store.initState(ctx, lease, name, now, now); err != nil {
			return nil, err
		}
	}
	tm.states[name] = &state
	return &state, nil
}

// failed handles a pass's error and returns when to come back: a fenced write ends the
// term; a state that changed under the cached copy is read again (at once, up to
// maxMoved times in a row); anything else is logged and told to the observer, and the
// schedule backs off.
func (s *Scheduler) failed(ctx context.Context, lease Lease, sc *compiled, tm *term, ev Event, err error) time.Time {
	now := time.Now()
	switch {
	case errors.Is(err, ErrFenced):
		s.loseLeadership(ctx, lease, "fenced", err)
		return now
	case errors.Is(err, errNotLeading):
		return now
	case errors.Is(err, errStateMoved):
		delete(tm.states, sc.Name)
		if sc.moved++; sc.moved <= maxMoved {
			return now
		}
		err = errors.New("scheduler: the schedule's state item keeps changing under the leader (another writer?)")
	}
	sc.failures++
	delay := s.backoff(sc.failures, err)
	sc.retryAt = now.Add(delay)
	level := slog.LevelWarn
	if errors.Is(err, ErrMalformedItem) {
		level = slog.LevelError
		delete(tm.states, sc.Name) // read it again after the backoff
	}
	s.logger.Log(ctx, level, "scheduler: tick failed; retrying", "schedule", sc.Name, "tick_id", ev.TickID,
		"failures", sc.failures, "retry_in", delay, "error", err)
	ev.Kind, ev.Token, ev.Err = EventTickFailed, lease.Token, err
	s.emit(ctx, ev)
	return sc.retryAt
}

// errNotLeading stops a pass whose lease ran out locally (the keeper decides the rest).
var errNotLeading = errors.New("scheduler: the lease ran out before the tick was claimed")

// enqueue sends the tick at tick (id) and records it: it claims the tick under the
// lease (or claims again the tick claimed before and not recorded: a resend), sends it
// with the tick id as idempotency key (and FIFO deduplication id), and records the
// send. A tick this replica sent but could not record is only recorded.
func (s *Scheduler) enqueue(ctx context.Context, lease Lease, sc *compiled, tm *term, tick time.Time, id string) error {
	if _, ok := s.lead.current(time.Now()); !ok {
		return errNotLeading
	}
	ev := s.tickEvent(lease, sc, tick, id)
	state := tm.states[sc.Name]
	if !state.sent && (state.tickID != id || !state.tick.Equal(tick)) {
		return fmt.Errorf("scheduler: tick %s is claimed and not recorded; it comes before %s", state.tickID, id)
	}
	if state.sent || state.sentID == "" {
		var claimed tickState
		var err error
		if state.sent {
			claimed, err = s.store.claim(ctx, lease, sc.Name, tick, id, time.Now())
		} else {
			claimed, err = s.store.reclaim(ctx, lease, sc.Name, *state, time.Now())
		}
		if err != nil {
			return err
		}
		state = &claimed
		tm.states[sc.Name] = state
		ev.Attempt = state.sends
		s.emit(ctx, with(ev, EventTickClaimed))
		message, err := sc.message(id, tick)
		if err != nil {
			return err // Start checked the schedule's message: not reached
		}
		sendCtx, cancel := context.WithTimeout(ctx, s.config.LeaseDuration+s.config.RenewInterval)
		messageID, err := s.producer.SendPrepared(sendCtx, message)
		cancel()
		if err != nil {
			return err // the claimed tick is sent again: it may have reached the queue
		}
		state.sentID = messageID
	}
	recorded, err := s.store.markSent(ctx, sc.Name, *state, state.sentID, time.Now())
	if err != nil {
		return err
	}
	tm.states[sc.Name] = &recorded
	ev.Attempt, ev.MessageID = recorded.sends, recorded.messageID
	s.emit(ctx, with(ev, EventTickEnqueued))
	return nil
}

// tickEvent is the event of the schedule's tick, without its kind.
func (s *Scheduler) tickEvent(lease Lease, sc *compiled, tick time.Time, id string) Event {
	return Event{Token: lease.Token, Schedule: sc.Name, TickID: id, Tick: tick, Queue: sc.queueURL}
}

func with(ev Event, kind EventKind) Event {
	ev.Kind = kind
	return ev
}

// message is the prepared message of the schedule's tick id at tick: the job type and
// payload, the tick id as idempotency key, and on FIFO queues as deduplication id (the
// message group is GroupID or the schedule's name), and a job id derived from the tick
// (producer.DerivedJobID), so a tick sent again keeps its job id. Start prepares one for
// each schedule, so a schedule the producer refuses fails Start.
func (sc *compiled) message(id string, tick time.Time) (producer.Prepared, error) {
	job := producer.Job{ID: producer.DerivedJobID(tick, id), Type: sc.JobType, Body: sc.body(), IdempotencyKey: id}
	if sqsinfo.IsFIFOName(sc.queueURL) {
		job.DeduplicationID = id
		job.GroupID = sc.GroupID
		if job.GroupID == "" {
			job.GroupID = sc.Name
		}
	}
	return producer.Prepare(sc.queueURL, job)
}
