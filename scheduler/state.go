package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A schedule's state item records the last tick claimed (tick_ms, tick_id, sent false
// until its send is recorded, sends: how many times it was claimed for a send) or the
// time up to which ticks are done (sent true; tick_id then names the last tick
// enqueued). Every write but the record of a send is fenced on the lease.

// readState reads a schedule's state item (strongly consistent); false when none. A
// malformed item is an error matching ErrMalformedItem.
func (s *store) readState(ctx context.Context, schedule string) (tickState, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: itemKey(stateID(schedule)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return tickState{}, false, fmt.Errorf("scheduler: reading the state of schedule %q: %w", schedule, err)
	}
	if out.Item == nil {
		return tickState{}, false, nil
	}
	state, err := decodeState(s.table, schedule, out.Item)
	return state, true, err
}

// initState writes a schedule's first state: no tick claimed, ticks start after baseline.
// Fenced on the lease. errStateMoved when the item exists.
func (s *store) initState(ctx context.Context, lease Lease, schedule string, baseline, now time.Time) (tickState, error) {
	item := itemKey(stateID(schedule))
	item[attrTick] = num(baseline.UnixMilli())
	item[attrToken] = num(lease.Token)
	item[attrSent] = boolean(true)
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": attrID},
	}})
	if err != nil {
		return tickState{}, err
	}
	return tickState{tick: baseline, token: lease.Token, sent: true}, nil
}

// claim records the tick at tick (its id: id) as the schedule's claimed, unsent tick,
// in one transaction with the lease condition, when the previous tick is earlier and
// was sent (or skipped). ErrFenced or errStateMoved.
func (s *store) claim(ctx context.Context, lease Lease, schedule string, tick time.Time, id string, now time.Time) (tickState, error) {
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: itemKey(stateID(schedule)),
		UpdateExpression:    aws.String("SET #tick = :tick, #tickID = :tickID, #token = :token, #sent = :false, #sends = :one REMOVE #message, #enqueued"),
		ConditionExpression: aws.String("#tick < :tick AND #sent = :true"),
		ExpressionAttributeNames: map[string]string{
			"#tick": attrTick, "#tickID": attrTickID, "#token": attrToken, "#sent": attrSent, "#sends": attrSends,
			"#message": attrMessageID, "#enqueued": attrEnqueued,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tick": num(tick.UnixMilli()), ":tickID": str(id), ":token": num(lease.Token), ":one": num(1),
			":true": boolean(true), ":false": boolean(false),
		},
	}})
	if err != nil {
		return tickState{}, err
	}
	return tickState{tick: tick, tickID: id, token: lease.Token, sends: 1}, nil
}

// reclaim claims the schedule's claimed, unsent tick again to send it once more (its
// first send failed, or may have reached SQS without being recorded: a lost response,
// a leader that died), under this lease, counting the send. It succeeds while the tick
// is still unsent and was claimed with this or a lower token. ErrFenced or
// errStateMoved.
func (s *store) reclaim(ctx context.Context, lease Lease, schedule string, claimed tickState, now time.Time) (tickState, error) {
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: itemKey(stateID(schedule)),
		UpdateExpression:    aws.String("SET #token = :token, #sends = :sends"),
		ConditionExpression: aws.String("#tick = :tick AND #tickID = :tickID AND #sent = :false AND #token <= :token"),
		ExpressionAttributeNames: map[string]string{
			"#tick": attrTick, "#tickID": attrTickID, "#token": attrToken, "#sent": attrSent, "#sends": attrSends,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tick": num(claimed.tick.UnixMilli()), ":tickID": str(claimed.tickID), ":token": num(lease.Token),
			":sends": num(int64(claimed.sends) + 1), ":false": boolean(false),
		},
	}})
	if err != nil {
		return tickState{}, err
	}
	claimed.token, claimed.sends, claimed.sentID = lease.Token, claimed.sends+1, ""
	return claimed, nil
}

// skip moves the schedule's state past skipped ticks up to last, without a message (the
// last enqueued tick's id and message id stay). Fenced on the lease.
func (s *store) skip(ctx context.Context, lease Lease, schedule string, state tickState, last, now time.Time) (tickState, error) {
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: itemKey(stateID(schedule)),
		UpdateExpression:         aws.String("SET #tick = :tick, #token = :token"),
		ConditionExpression:      aws.String("#tick < :tick AND #sent = :true"),
		ExpressionAttributeNames: map[string]string{"#tick": attrTick, "#token": attrToken, "#sent": attrSent},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tick": num(last.UnixMilli()), ":token": num(lease.Token), ":true": boolean(true),
		},
	}})
	if err != nil {
		return tickState{}, err
	}
	state.tick, state.token = last, lease.Token
	return state, nil
}

// markSent records the claimed tick as enqueued with its message id. It needs no lease
// (it only confirms a send that happened) but the claim's token: a tick claimed again
// by a later leader is that leader's to record.
func (s *store) markSent(ctx context.Context, schedule string, state tickState, messageID string, now time.Time) (tickState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: itemKey(stateID(schedule)),
		UpdateExpression:    aws.String("SET #sent = :true, #message = :message, #enqueued = :now"),
		ConditionExpression: aws.String("#tick = :tick AND #tickID = :tickID AND #token = :token"),
		ExpressionAttributeNames: map[string]string{
			"#sent": attrSent, "#message": attrMessageID, "#enqueued": attrEnqueued, "#tick": attrTick,
			"#tickID": attrTickID, "#token": attrToken,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":true": boolean(true), ":message": str(messageID), ":now": num(now.UnixMilli()),
			":tick": num(state.tick.UnixMilli()), ":tickID": str(state.tickID), ":token": num(state.token),
		},
	})
	if isConditionFailed(err) {
		return tickState{}, errStateMoved
	}
	if err != nil {
		return tickState{}, fmt.Errorf("scheduler: recording tick %s as enqueued: %w", state.tickID, err)
	}
	state.sent, state.messageID, state.enqueued, state.sentID = true, messageID, now, ""
	return state, nil
}

// transact runs write in one TransactWriteItems with the lease condition, and names a
// cancellation: ErrFenced (the lease check failed) or errStateMoved (write's own
// condition failed).
func (s *store) transact(ctx context.Context, lease Lease, now time.Time, write types.TransactWriteItem) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{{ConditionCheck: s.leaseCondition(lease, now)}, write},
	})
	if err == nil {
		return nil
	}
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok {
		reasons := canceled.CancellationReasons
		if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
			return fmt.Errorf("%w (token %d)", ErrFenced, lease.Token)
		}
		if len(reasons) > 1 && aws.ToString(reasons[1].Code) == "ConditionalCheckFailed" {
			return errStateMoved
		}
	}
	return fmt.Errorf("scheduler: TransactWriteItems on %s: %w", s.table, err)
}
