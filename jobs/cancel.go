package jobs

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxCancelRounds bounds Cancel's writes when the record's state keeps changing between
// them.
const maxCancelRounds = 3

// Cancel asks for job id to stop, and returns its record after the request:
//
//   - not started (no record, enqueued, retrying or interrupted): the record becomes
//     cancelled at once; when the job's message arrives, it does not run and is deleted
//     (outcome [sqsworker.OutcomeCancelled]). An id with no record gets one, kept for
//     Config.TTL: a job sent without a record can be cancelled before it starts;
//   - running: the record keeps state running with CancelRequested set; the worker's
//     middleware cancels the handler's context within one CheckInterval and records
//     the job as cancelled;
//   - finished (succeeded, failed, dead-lettered, cancelled): nothing changes, and the
//     error is a [*FinishedError] (matching [ErrFinished]) with the record.
//
// Each round is one conditional UpdateItem; a job that starts between the rounds takes
// a second.
//
// With Config.Idempotency, the job's idempotency record is read first: a completed one
// is a finished job, one in progress a running job.
func (s *Store) Cancel(ctx context.Context, id string) (Record, error) {
	r, found, err := s.idempotencyRecord(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if found {
		own, ownErr := s.get(ctx, id)
		merged := merge(id, own, ownErr == nil, r)
		if merged.State.Finished() {
			return merged, &FinishedError{Record: merged}
		}
		u := &update{}
		u.set(attrState, str(string(StateRunning)), "if_not_exists(#"+attrState+", :"+attrState+")")
		u.set(attrCancel, &types.AttributeValueMemberBOOL{Value: true})
		item, _, err := s.run(ctx, id, u)
		if err != nil {
			return Record{}, err
		}
		own, err = record(item)
		if err != nil {
			return Record{}, fmt.Errorf("jobs: job %s: %w", id, err)
		}
		return merge(id, own, true, r), nil
	}
	for range maxCancelRounds {
		u := &update{condition: "attribute_not_exists(#" + attrState + ") OR #" + attrState + " IN (:enqueued, :retrying, :interrupted)"}
		u.set(attrState, str(string(StateCancelled)))
		u.set(attrCancel, &types.AttributeValueMemberBOOL{Value: true})
		u.values[":enqueued"], u.values[":retrying"], u.values[":interrupted"] = str(string(StateEnqueued)), str(string(StateRetrying)), str(string(StateInterrupted))
		item, conflict, err := s.run(ctx, id, u)
		if err != nil {
			return Record{}, err
		}
		if !conflict {
			return record(item)
		}
		old, err := record(item)
		if err != nil {
			return Record{}, fmt.Errorf("jobs: job %s: %w", id, err)
		}
		if old.State.Finished() {
			return old, &FinishedError{Record: old}
		}
		if old.State != StateRunning {
			continue // changed since: decide again
		}
		u = &update{condition: "#" + attrState + " = :running"}
		u.set(attrCancel, &types.AttributeValueMemberBOOL{Value: true})
		u.names = append(u.names, attrState)
		u.values[":running"] = str(string(StateRunning))
		item, conflict, err = s.run(ctx, id, u)
		if err != nil {
			return Record{}, err
		}
		if !conflict {
			return record(item)
		}
	}
	return Record{}, fmt.Errorf("jobs: cancelling job %s: its record changed %d times in a row; try again", id, maxCancelRounds)
}
