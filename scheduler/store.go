package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/producer"
)

// DynamoDBAPI is the part of the DynamoDB client the scheduler uses (the lease, the
// schedules' state and, through the producer, the ticks' unique keys);
// *dynamodb.Client satisfies it.
type DynamoDBAPI interface {
	producer.DynamoDBAPI
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// The table's items. The table has the string partition key "id" (the idempotency
// table's schema: one table can hold idempotency records, unique keys and the
// scheduler). Times are epoch milliseconds; no item relies on DynamoDB's TTL.
const (
	attrID         = "id"
	attrOwner      = "owner"
	attrToken      = "token"
	attrExpiry     = "expiry_ms"
	attrAcquired   = "acquired_ms"
	attrTick       = "tick_ms"
	attrTickID     = "tick_id"
	attrSent       = "sent"
	attrMessageID  = "message_id"
	attrEnqueued   = "enqueued_ms"
	leasePrefix    = "scheduler#lease#"
	schedulePrefix = "scheduler#schedule#"
)

// ErrFenced is returned (wrapped) by a write conditioned on the lease when the writer no
// longer holds it: another replica took it over (its token is higher) or it expired.
var ErrFenced = errors.New("scheduler: the lease is no longer held with this token")

// errStateMoved reports a schedule state item that changed under the leader's cached
// copy; the leader reads it again.
var errStateMoved = errors.New("scheduler: the schedule's state changed")

// Lease is the leader lease as stored.
type Lease struct {
	// Name is the lease's name (Config.LeaseName).
	Name string `json:"name"`
	// Owner is the replica holding it (Config.Owner).
	Owner string `json:"owner"`
	// Token is the fencing token: 1 for the first holder, incremented at each takeover.
	Token int64 `json:"token"`
	// Expiry is when the lease lapses unless renewed (the writer's clock).
	Expiry time.Time `json:"expiry"`
	// Acquired is when Owner took it.
	Acquired time.Time `json:"acquired"`
}

// tickState is a schedule's state item: the last tick claimed and whether it was sent.
type tickState struct {
	tick      time.Time // the last tick claimed (or the baseline, with tickID "")
	tickID    string
	token     int64
	sent      bool
	messageID string
	enqueued  time.Time
	// sentID and sentKind remember, in this replica only, a claimed tick sent (or found
	// sent) whose record failed: it is recorded, never sent again.
	sentID   string
	sentKind EventKind
}

// store reads and writes the scheduler's items.
type store struct {
	client  DynamoDBAPI
	table   string
	lease   string        // the lease name
	timeout time.Duration // bounds each call; 0: ctx alone
}

// bound returns ctx limited to the store's call timeout.
func (s *store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id}}
}

func (s *store) leaseKey() map[string]types.AttributeValue { return key(leasePrefix + s.lease) }

func stateKey(schedule string) map[string]types.AttributeValue {
	return key(schedulePrefix + schedule)
}

// readLease reads the lease item (strongly consistent); false when there is none.
func (s *store) readLease(ctx context.Context) (Lease, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: s.leaseKey(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Lease{}, false, fmt.Errorf("scheduler: reading the lease from %s: %w", s.table, err)
	}
	if out.Item == nil {
		return Lease{}, false, nil
	}
	return Lease{
		Name:     s.lease,
		Owner:    stringOf(out.Item[attrOwner]),
		Token:    intOf(out.Item[attrToken]),
		Expiry:   millis(intOf(out.Item[attrExpiry])),
		Acquired: millis(intOf(out.Item[attrAcquired])),
	}, true, nil
}

// acquire takes the lease for owner until now+duration: the first ever (no item), or
// after seen lapsed (seen's token is still the item's, so of concurrent standbys one
// wins). The new token is seen's plus one. ErrFenced when another replica was first.
func (s *store) acquire(ctx context.Context, owner string, seen *Lease, now time.Time, duration time.Duration) (Lease, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	lease := Lease{Name: s.lease, Owner: owner, Token: 1, Expiry: now.Add(duration), Acquired: now}
	var err error
	if seen == nil {
		item := s.leaseKey()
		item[attrOwner] = str(owner)
		item[attrToken] = num(1)
		item[attrExpiry] = num(lease.Expiry.UnixMilli())
		item[attrAcquired] = num(now.UnixMilli())
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table), Item: item,
			ConditionExpression:      aws.String("attribute_not_exists(#id)"),
			ExpressionAttributeNames: map[string]string{"#id": attrID},
		})
	} else {
		lease.Token = seen.Token + 1
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: s.leaseKey(),
			UpdateExpression:    aws.String("SET #owner = :owner, #token = :next, #expiry = :expiry, #acquired = :now"),
			ConditionExpression: aws.String("#token = :seen AND #expiry <= :now"),
			ExpressionAttributeNames: map[string]string{
				"#owner": attrOwner, "#token": attrToken, "#expiry": attrExpiry, "#acquired": attrAcquired,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":owner": str(owner), ":next": num(lease.Token), ":seen": num(seen.Token),
				":expiry": num(lease.Expiry.UnixMilli()), ":now": num(now.UnixMilli()),
			},
		})
	}
	if isConditionFailed(err) {
		return Lease{}, fmt.Errorf("%w: another replica took the lease first", ErrFenced)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("scheduler: taking the lease in %s: %w", s.table, err)
	}
	return lease, nil
}

// leaseCondition is the condition every fenced write checks: the lease item still names
// this owner and token and has not expired at now.
func (s *store) leaseCondition(lease Lease, now time.Time) *types.ConditionCheck {
	return &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 s.leaseKey(),
		ConditionExpression: aws.String("#owner = :owner AND #token = :token AND #expiry > :now"),
		ExpressionAttributeNames: map[string]string{
			"#owner": attrOwner, "#token": attrToken, "#expiry": attrExpiry,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": str(lease.Owner), ":token": num(lease.Token), ":now": num(now.UnixMilli()),
		},
	}
}

// renew extends the lease to now+duration. ErrFenced when it is no longer held.
func (s *store) renew(ctx context.Context, lease Lease, now time.Time, duration time.Duration) (Lease, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	check := s.leaseCondition(lease, now)
	lease.Expiry = now.Add(duration)
	values := check.ExpressionAttributeValues
	values[":expiry"] = num(lease.Expiry.UnixMilli())
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.leaseKey(),
		UpdateExpression:          aws.String("SET #expiry = :expiry"),
		ConditionExpression:       check.ConditionExpression,
		ExpressionAttributeNames:  check.ExpressionAttributeNames,
		ExpressionAttributeValues: values,
	})
	if isConditionFailed(err) {
		return Lease{}, fmt.Errorf("%w (token %d)", ErrFenced, lease.Token)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("scheduler: renewing the lease in %s: %w", s.table, err)
	}
	return lease, nil
}

// release ends the lease at now so that a standby takes it at once.
func (s *store) release(ctx context.Context, lease Lease, now time.Time) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.leaseKey(),
		UpdateExpression:          aws.String("SET #expiry = :now"),
		ConditionExpression:       aws.String("#owner = :owner AND #token = :token"),
		ExpressionAttributeNames:  map[string]string{"#owner": attrOwner, "#token": attrToken, "#expiry": attrExpiry},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(lease.Owner), ":token": num(lease.Token), ":now": num(now.UnixMilli())},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("scheduler: releasing the lease in %s: %w", s.table, err)
	}
	return nil
}

// readState reads a schedule's state item (strongly consistent); false when none.
func (s *store) readState(ctx context.Context, schedule string) (tickState, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: stateKey(schedule), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return tickState{}, false, fmt.Errorf("scheduler: reading the state of schedule %q: %w", schedule, err)
	}
	if out.Item == nil {
		return tickState{}, false, nil
	}
	sent, _ := out.Item[attrSent].(*types.AttributeValueMemberBOOL)
	state := tickState{
		tick:      millis(intOf(out.Item[attrTick])),
		tickID:    stringOf(out.Item[attrTickID]),
		token:     intOf(out.Item[attrToken]),
		sent:      sent != nil && sent.Value,
		messageID: stringOf(out.Item[attrMessageID]),
		enqueued:  millis(intOf(out.Item[attrEnqueued])),
	}
	return state, true, nil
}

// initState writes a schedule's first state: no tick claimed, ticks start after baseline.
// Fenced on the lease. errStateMoved when the item exists.
func (s *store) initState(ctx context.Context, lease Lease, schedule string, baseline, now time.Time) (tickState, error) {
	item := stateKey(schedule)
	item[attrTick] = num(baseline.UnixMilli())
	item[attrToken] = num(lease.Token)
	item[attrSent] = &types.AttributeValueMemberBOOL{Value: true}
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

// claim records tick as the schedule's claimed (not yet sent) tick, in one transaction
// with the lease condition. It succeeds when the previous tick is earlier and was sent,
// or when the same tick is still unsent and was claimed with this or a lower token (a
// leader that died, or this leader's own failed send). ErrFenced or errStateMoved.
func (s *store) claim(ctx context.Context, lease Lease, schedule string, tick, now time.Time) (tickState, error) {
	id := TickID(schedule, tick)
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: stateKey(schedule),
		UpdateExpression:    aws.String("SET #tick = :tick, #tickID = :tickID, #token = :token, #sent = :false REMOVE #message, #enqueued"),
		ConditionExpression: aws.String("(#tick < :tick AND #sent = :true) OR (#tick = :tick AND #sent = :false AND #token <= :token)"),
		ExpressionAttributeNames: map[string]string{
			"#tick": attrTick, "#tickID": attrTickID, "#token": attrToken, "#sent": attrSent,
			"#message": attrMessageID, "#enqueued": attrEnqueued,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tick": num(tick.UnixMilli()), ":tickID": str(id), ":token": num(lease.Token),
			":true": &types.AttributeValueMemberBOOL{Value: true}, ":false": &types.AttributeValueMemberBOOL{Value: false},
		},
	}})
	if err != nil {
		return tickState{}, err
	}
	return tickState{tick: tick, tickID: id, token: lease.Token}, nil
}

// skip moves the schedule's state past skipped ticks up to last, without a message (the
// last enqueued tick's id and message id stay). Fenced on the lease.
func (s *store) skip(ctx context.Context, lease Lease, schedule string, last, now time.Time) (tickState, error) {
	err := s.transact(ctx, lease, now, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table), Key: stateKey(schedule),
		UpdateExpression:         aws.String("SET #tick = :tick, #token = :token"),
		ConditionExpression:      aws.String("#tick < :tick AND #sent = :true"),
		ExpressionAttributeNames: map[string]string{"#tick": attrTick, "#token": attrToken, "#sent": attrSent},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":tick": num(last.UnixMilli()), ":token": num(lease.Token), ":true": &types.AttributeValueMemberBOOL{Value: true},
		},
	}})
	if err != nil {
		return tickState{}, err
	}
	return tickState{tick: last, token: lease.Token, sent: true}, nil
}

// markSent records the claimed tick as enqueued with its message id. It needs no lease:
// it only confirms a send that happened.
func (s *store) markSent(ctx context.Context, schedule string, state tickState, messageID string, now time.Time) (tickState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: stateKey(schedule),
		UpdateExpression:    aws.String("SET #sent = :true, #message = :message, #enqueued = :now"),
		ConditionExpression: aws.String("#tick = :tick"),
		ExpressionAttributeNames: map[string]string{
			"#sent": attrSent, "#message": attrMessageID, "#enqueued": attrEnqueued, "#tick": attrTick,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":true": &types.AttributeValueMemberBOOL{Value: true}, ":message": str(messageID),
			":now": num(now.UnixMilli()), ":tick": num(state.tick.UnixMilli()),
		},
	})
	if isConditionFailed(err) {
		return tickState{}, errStateMoved
	}
	if err != nil {
		return tickState{}, fmt.Errorf("scheduler: recording tick %s as enqueued: %w", state.tickID, err)
	}
	state.sent, state.messageID, state.enqueued = true, messageID, now
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

func isConditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}

func str(value string) types.AttributeValue { return &types.AttributeValueMemberS{Value: value} }

func num(value int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(value, 10)}
}

func stringOf(value types.AttributeValue) string {
	if s, ok := value.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func intOf(value types.AttributeValue) int64 {
	if n, ok := value.(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

// millis converts epoch milliseconds to a UTC time; 0 is the zero time.
func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
