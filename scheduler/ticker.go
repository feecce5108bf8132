package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/producer"
)

// maxTicksPerPass bounds the ticks one pass walks through for a schedule (a schedule
// every second after a long time without a leader); the next pass goes on from there.
const maxTicksPerPass = 1 << 20

// runTicker enqueues due ticks while this replica holds the lease, until stop.
func (s *Scheduler) runTicker(ctx context.Context) {
	var token int64
	var states map[string]*tickState // this term's cached state items
	for {
		changed := s.lead.changes()
		lease, ok := s.lead.current(time.Now())
		if !ok {
			if !s.wait(s.config.RenewInterval, changed) {
				return
			}
			continue
		}
		if lease.Token != token {
			token, states = lease.Token, map[string]*tickState{} // a new term reads the states again
		}
		next := time.Now().Add(s.config.RenewInterval)
		for i := range s.schedules {
			if s.stopped() {
				return
			}
			next = minTime(next, s.tickSchedule(ctx, lease, &s.schedules[i], states))
		}
		if !s.wait(time.Until(next), changed) {
			return
		}
	}
}

// tickSchedule enqueues the schedule's due ticks and returns when to come back.
func (s *Scheduler) tickSchedule(ctx context.Context, lease Lease, sc *compiled, states map[string]*tickState) time.Time {
	retry := time.Now().Add(retryInterval)
	state, err := s.loadState(ctx, lease, sc.Name, states)
	if err != nil {
		s.emit(ctx, Event{Kind: EventTickFailed, Token: lease.Token, Schedule: sc.Name, Err: err})
		return retry
	}
	if state == nil {
		return time.Now() // the state moved; read it again now
	}
	if !state.sent && state.tickID != "" { // claimed by an earlier term (or this one) and not recorded as sent
		if !s.enqueue(ctx, lease, sc, states, state.tick) {
			return retry
		}
	}
	due, skip := s.dueTicks(sc, states[sc.Name].tick, time.Now())
	if skip.count > 0 {
		if !s.skip(ctx, lease, sc, states, skip) {
			return retry
		}
	}
	for _, tick := range due {
		if !s.enqueue(ctx, lease, sc, states, tick) {
			return retry
		}
	}
	if state := states[sc.Name]; state != nil {
		if next := sc.table.next(state.tick); !next.IsZero() {
			return next.Add(sc.offset)
		}
	}
	return time.Now().Add(s.config.RenewInterval)
}

// loadState returns the schedule's cached state, reading it (or writing its baseline:
// ticks start after now) when this term has not yet. nil, nil when it moved meanwhile.
func (s *Scheduler) loadState(ctx context.Context, lease Lease, name string, states map[string]*tickState) (*tickState, error) {
	if state := states[name]; state != nil {
		return state, nil
	}
	state, found, err := s.store.readState(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		now := time.Now()
		state, err = s.store.initState(ctx, lease, name, now, now)
		switch {
		case errors.Is(err, errStateMoved):
			return nil, nil
		case errors.Is(err, ErrFenced):
			s.loseLeadership(ctx, lease, "fenced", err)
			return nil, err
		case err != nil:
			return nil, err
		}
	}
	states[name] = &state
	return &state, nil
}

// skipped is a run of missed ticks beyond the schedule's CatchUp.
type skipped struct {
	count       int
	first, last time.Time
}

// dueTicks returns the ticks after last whose time (plus the schedule's jitter) has come
// by now: the on-time ones, and of the missed ones (later than MissedAfter) the CatchUp
// most recent; the older missed ticks are returned as skipped.
func (s *Scheduler) dueTicks(sc *compiled, last, now time.Time) ([]time.Time, skipped) {
	offset := sc.offset
	var late, onTime []time.Time
	var skip skipped
	tick := last
	for range maxTicksPerPass {
		tick = sc.table.next(tick)
		if tick.IsZero() || tick.Add(offset).After(now) {
			break
		}
		if now.Sub(tick.Add(offset)) <= s.config.MissedAfter {
			onTime = append(onTime, tick)
			continue
		}
		late = append(late, tick)
		if len(late) > sc.CatchUp {
			if skip.count == 0 {
				skip.first = late[0]
			}
			skip.count++
			skip.last = late[0]
			late = late[1:]
		}
	}
	return append(late, onTime...), skip
}

// skip records the skipped ticks as passed (fenced on the lease) and says so.
func (s *Scheduler) skip(ctx context.Context, lease Lease, sc *compiled, states map[string]*tickState, skip skipped) bool {
	state, err := s.store.skip(ctx, lease, sc.Name, skip.last, time.Now())
	if !s.stored(ctx, lease, sc, states, err) {
		return false
	}
	states[sc.Name] = &state
	s.logger.Warn("scheduler: missed ticks skipped", "schedule", sc.Name, "skipped", skip.count, "first", skip.first, "last", skip.last)
	s.emit(ctx, Event{
		Kind: EventTicksSkipped, Token: lease.Token, Schedule: sc.Name, TickID: TickID(sc.Name, skip.first),
		Tick: skip.first, Skipped: skip.count, LastSkipped: skip.last, Queue: sc.queueURL,
	})
	return true
}

// stored handles the error of a fenced write: false (after saying why) unless nil.
func (s *Scheduler) stored(ctx context.Context, lease Lease, sc *compiled, states map[string]*tickState, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrFenced):
		s.loseLeadership(ctx, lease, "fenced", err)
	case errors.Is(err, errStateMoved):
		delete(states, sc.Name) // read it again
	default:
		s.emit(ctx, Event{Kind: EventTickFailed, Token: lease.Token, Schedule: sc.Name, Err: err})
	}
	return false
}

// enqueue claims tick under the lease, sends its message with the tick id as unique
// key (deduplication id on FIFO queues) and idempotency key, and records it as sent. A
// tick this replica sent but could not record is only recorded.
func (s *Scheduler) enqueue(ctx context.Context, lease Lease, sc *compiled, states map[string]*tickState, tick time.Time) bool {
	now := time.Now()
	if _, ok := s.lead.current(now); !ok {
		return false
	}
	id := TickID(sc.Name, tick)
	tickEvent := Event{Token: lease.Token, Schedule: sc.Name, TickID: id, Tick: tick, Queue: sc.queueURL}
	claimed := states[sc.Name]
	if claimed == nil || claimed.sent || !claimed.tick.Equal(tick) || claimed.sentID == "" {
		state, err := s.store.claim(ctx, lease, sc.Name, tick, now)
		if !s.stored(ctx, lease, sc, states, err) {
			return false
		}
		claimed = &state
		states[sc.Name] = claimed
		s.emit(ctx, with(tickEvent, EventTickClaimed))
		if !s.send(ctx, sc, claimed, tickEvent) {
			return false
		}
	}
	sent, err := s.store.markSent(ctx, sc.Name, *claimed, claimed.sentID, time.Now())
	if err != nil {
		if errors.Is(err, errStateMoved) {
			delete(states, sc.Name) // read it again
		} else {
			ev := with(tickEvent, EventTickFailed)
			ev.Err = err
			s.emit(ctx, ev)
		}
		return false
	}
	states[sc.Name] = &sent
	ev := with(tickEvent, claimed.sentKind)
	ev.MessageID = claimed.sentID
	s.emit(ctx, ev)
	return true
}

// send sends the claimed tick's message and notes its message id in claimed: the new
// message's (EventTickEnqueued), or the first send's when the unique key was taken
// (EventTickDeduplicated). False after a failure, which is retried.
func (s *Scheduler) send(ctx context.Context, sc *compiled, claimed *tickState, tickEvent Event) bool {
	sendCtx, cancel := context.WithTimeout(ctx, s.config.LeaseDuration+s.config.RenewInterval)
	messageID, err := s.producer.Send(sendCtx, sc.queueURL, sc.job(claimed.tickID))
	cancel()
	kind := EventTickEnqueued
	if duplicate, ok := errors.AsType[*producer.DuplicateJobError](err); ok && !duplicate.Pending {
		kind, messageID, err = EventTickDeduplicated, duplicate.MessageID, nil
	}
	if errors.Is(err, producer.ErrUniqueNotConfirmed) {
		err = nil // sent; the unique key holds it until UniquePending, our record after that
	}
	if err != nil {
		ev := with(tickEvent, EventTickFailed)
		ev.Err = err
		s.emit(ctx, ev)
		return false
	}
	claimed.sentID, claimed.sentKind = messageID, kind
	return true
}

func with(ev Event, kind EventKind) Event {
	ev.Kind = kind
	return ev
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// job is the message of the schedule's tick id: the job type and payload, the tick id as
// idempotency key and unique key (the deduplication id on FIFO queues, whose message
// group is GroupID or the schedule's name).
func (sc *compiled) job(id string) producer.Job {
	job := producer.Job{
		Type: sc.JobType, Body: sc.body(),
		IdempotencyKey: id, UniqueKey: id, UniqueFor: DefaultUniqueFor,
	}
	if sqsx.IsFIFOName(sc.queueURL) {
		job.GroupID = sc.GroupID
		if job.GroupID == "" {
			job.GroupID = sc.Name
		}
	}
	return job
}
