package scheduler

import (
	"context"
	"errors"
	"time"
)

// Status is what the table says about a scheduler group: its lease and each schedule's
// last tick. `sqsworker schedules` prints it.
type Status struct {
	// Leader is the lease as stored; nil when no replica ever took it. A lease whose
	// Expiry has passed has no leader now (LeaderAlive false).
	Leader      *Lease `json:"leader"`
	LeaderAlive bool   `json:"leader_alive"`
	// LeaseProblem says what is wrong with a lease item that is not a lease (see
	// ErrMalformedItem): no replica takes it until it is fixed or deleted.
	LeaseProblem string `json:"lease_problem,omitempty"`
	// Schedules are the schedules' states, in the order given.
	Schedules []ScheduleStatus `json:"schedules"`
}

// ScheduleStatus is one schedule's state.
type ScheduleStatus struct {
	Name string `json:"name"`
	// LastEnqueuedTick is the id of the last tick enqueued ("" when none yet), sent as
	// MessageID at EnqueuedAt.
	LastEnqueuedTick string    `json:"last_enqueued_tick"`
	MessageID        string    `json:"message_id,omitempty"`
	EnqueuedAt       time.Time `json:"enqueued_at,omitzero"`
	// ClaimedTick is the id of a tick claimed but not yet recorded as sent (a send in
	// progress, or a leader that died during it: the next leader sends it again),
	// claimed for a send Sends times.
	ClaimedTick string `json:"claimed_tick,omitempty"`
	Sends       int    `json:"sends,omitempty"`
	// Problem says what is wrong with a state item that is not the scheduler's (see
	// ErrMalformedItem): the schedule does not tick until it is fixed or deleted.
	Problem string `json:"problem,omitempty"`
	// Through is the time up to which ticks are done (enqueued, or skipped as missed).
	Through time.Time `json:"through,omitzero"`
}

// ReadStatus reads the lease named leaseName (if empty, DefaultLeaseName) and the state
// of each schedule from table, with strongly consistent reads, judging the lease's expiry
// by now. A malformed item is reported in LeaseProblem or the schedule's Problem.
// Errors: the GetItem calls' errors.
func ReadStatus(ctx context.Context, client DynamoDBAPI, table, leaseName string, schedules []Schedule, now time.Time) (Status, error) {
	if leaseName == "" {
		leaseName = DefaultLeaseName
	}
	st := &store{client: client, table: table, lease: leaseName}
	var status Status
	lease, found, err := st.readLease(ctx)
	switch {
	case errors.Is(err, ErrMalformedItem):
		status.LeaseProblem = err.Error()
	case err != nil:
		return Status{}, err
	case found:
		status.Leader = &lease
		status.LeaderAlive = lease.Expiry.After(now)
	}
	for _, schedule := range schedules {
		state, found, err := st.readState(ctx, schedule.Name)
		entry := ScheduleStatus{Name: schedule.Name}
		switch {
		case errors.Is(err, ErrMalformedItem):
			entry.Problem = err.Error()
		case err != nil:
			return Status{}, err
		case found:
			entry.Through = state.tick
			switch {
			case state.sent && state.tickID != "":
				entry.LastEnqueuedTick, entry.MessageID, entry.EnqueuedAt = state.tickID, state.messageID, state.enqueued
			case !state.sent:
				entry.ClaimedTick, entry.Sends = state.tickID, state.sends
			}
		}
		status.Schedules = append(status.Schedules, entry)
	}
	return status, nil
}
