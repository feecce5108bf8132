package fleetlimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// Attributes of a permits item: one map per slot ("p0" to "p15": holder and lease end),
// the fencing counter, and the TTL.
const (
	attributeFence  = "fence"
	attributeHolder = "h"
	attributeUntil  = "u" // lease end, epoch milliseconds
	slotPrefix      = "p"
	// ttlMargin is how long after the last lease taken or renewed DynamoDB's TTL may
	// delete a permits item (all of its leases have ended by then).
	ttlMargin = time.Hour
	// acquireTries bounds the writes of one Acquire: the first guess, a retry on a slot
	// the failed write showed free, and one more shard.
	acquireTries = 3
)

// Permit is one of a key's Config.Concurrency permits, held from [Limiter.Acquire] until
// [Permit.Release] or until its lease ends without [Permit.Renew].
type Permit struct {
	limiter *Limiter
	item    string // the permits item's key
	slot    int
	holder  string
	// Token is the fencing token: it grows with every permit taken from the same item,
	// so a downstream that remembers the highest token it saw for a key can refuse a
	// holder whose lease ended and was taken again (Shard and Token together order the
	// permits of a key spread over several items).
	Token int64
	// Shard is the item the permit is in (0 for a limit of up to SlotsPerItem permits).
	Shard int
	// until is when the lease ends by this worker's clock, as last taken or renewed.
	until time.Time
}

// Acquire takes a permit of key with one conditional write: the write names one slot and
// succeeds only when that slot is empty or its lease has ended, so two workers never
// take the same slot (no read comes before it). A write that fails returns the item as
// DynamoDB holds it, which shows the slots that are free: Acquire tries one of them,
// then another shard, at most three writes in all. A write the SDK retried after its
// answer was lost finds the slot held by this very acquisition, and takes it as its
// own (the holder name is unique to each acquisition), so a retry never leaks a permit.
// With every slot held it returns a [*BusyError]; any other error is DynamoDB's.
func (l *Limiter) Acquire(ctx context.Context, key string) (*Permit, error) {
	shards := (l.config.Concurrency + SlotsPerItem - 1) / SlotsPerItem
	shard := rand.IntN(shards)
	slot := rand.IntN(l.slotsIn(shard))
	holder := l.holder()
	for range acquireTries {
		item, err := table.LimitPermitsKey(l.config.Name, shard, key)
		if err != nil {
			return nil, err
		}
		now := l.config.Now()
		until := now.Add(l.config.Lease)
		output, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           aws.String(l.config.Table),
			Key:                 table.KeyAttribute(item),
			UpdateExpression:    aws.String("SET #slot = :lease, #fence = if_not_exists(#fence, :zero) + :one, #ttl = :ttl"),
			ConditionExpression: aws.String("attribute_not_exists(#slot) OR #slot.#until < :now"),
			ExpressionAttributeNames: map[string]string{
				"#slot": slotName(slot), "#fence": attributeFence, "#until": attributeUntil, "#ttl": table.TTLAttribute,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":lease": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
					attributeHolder: &types.AttributeValueMemberS{Value: holder},
					attributeUntil:  millis(until),
				}},
				":zero": number(0), ":one": number(1), ":now": millis(now), ":ttl": ttl(until),
			},
			ReturnValues:                        types.ReturnValueUpdatedNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			token, _ := readNumber(output.Attributes[attributeFence])
			return &Permit{limiter: l, item: item, slot: slot, holder: holder, Token: token, Shard: shard, until: until}, nil
		}
		failed, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
		if !ok {
			return nil, fmt.Errorf("fleetlimit: taking a permit of limit %s, key %q: %w", l.config.Name, key, err)
		}
		if ownedBy(failed.Item, slot, holder) {
			// An earlier attempt of this very write succeeded and its answer was lost
			// (the SDK retried it): the slot is this acquisition's. The item's fencing
			// counter may have grown since; its value is a token at least as high.
			token, _ := readNumber(failed.Item[attributeFence])
			return &Permit{limiter: l, item: item, slot: slot, holder: holder, Token: token, Shard: shard, until: until}, nil
		}
		if free := freeSlots(failed.Item, l.slotsIn(shard), now); len(free) > 0 {
			slot = free[rand.IntN(len(free))]
			continue
		}
		if shards == 1 {
			break
		}
		shard = (shard + 1) % shards
		slot = rand.IntN(l.slotsIn(shard))
	}
	return nil, &BusyError{Limit: l.config.Name, Key: key, Kind: "concurrency", RetryAfter: l.retryDelay()}
}

// Renew extends the permit's lease by Config.Lease from now, on the condition that this
// permit still holds its slot. It returns an error matching [ErrPermitLost] when the
// slot is another's (the lease ended and was taken), and DynamoDB's error otherwise.
func (p *Permit) Renew(ctx context.Context) error {
	l := p.limiter
	until := l.config.Now().Add(l.config.Lease)
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.config.Table),
		Key:                       table.KeyAttribute(p.item),
		UpdateExpression:          aws.String("SET #slot.#until = :until, #ttl = :ttl"),
		ConditionExpression:       aws.String("#slot.#holder = :holder"),
		ExpressionAttributeNames:  map[string]string{"#slot": slotName(p.slot), "#until": attributeUntil, "#holder": attributeHolder, "#ttl": table.TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": millis(until), ":holder": &types.AttributeValueMemberS{Value: p.holder}, ":ttl": ttl(until)},
	})
	if _, lost := errors.AsType[*types.ConditionalCheckFailedException](err); lost {
		return fmt.Errorf("%w: %s slot %d is held by another worker", ErrPermitLost, p.item, p.slot)
	}
	if err != nil {
		return fmt.Errorf("fleetlimit: renewing the permit %s slot %d: %w", p.item, p.slot, err)
	}
	p.until = until
	return nil
}

// Release gives the permit back: it empties its slot on the condition that this permit
// still holds it (a permit lost to another holder is left to that holder). It returns
// DynamoDB's error, not the lost condition.
func (p *Permit) Release(ctx context.Context) error {
	l := p.limiter
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.config.Table),
		Key:                       table.KeyAttribute(p.item),
		UpdateExpression:          aws.String("REMOVE #slot"),
		ConditionExpression:       aws.String("#slot.#holder = :holder"),
		ExpressionAttributeNames:  map[string]string{"#slot": slotName(p.slot), "#holder": attributeHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":holder": &types.AttributeValueMemberS{Value: p.holder}},
	})
	if _, lost := errors.AsType[*types.ConditionalCheckFailedException](err); err == nil || lost {
		return nil
	}
	return fmt.Errorf("fleetlimit: releasing the permit %s slot %d: %w", p.item, p.slot, err)
}

// keep renews the permit every Config.Lease/3 until stop is called, and calls lost
// (with ErrPermitLost) when the permit was taken by another holder, or when renewals
// failed until less than a third of the lease was left. stop waits for the renewing
// goroutine to end.
func (p *Permit) keep(lost func(error)) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	every := p.limiter.config.Lease / 3
	go func() { // owned by keep's caller through stop
		defer close(ended)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			err := p.Renew(ctx)
			cancel()
			if errors.Is(err, ErrPermitLost) || (err != nil && p.until.Sub(p.limiter.config.Now()) < every) {
				lost(fmt.Errorf("%w: %w", ErrPermitLost, err))
				return
			}
		}
	}()
	return func() { close(done); <-ended }
}

// slotsIn returns how many slots shard holds: SlotsPerItem, fewer in the last shard.
func (l *Limiter) slotsIn(shard int) int {
	return min(SlotsPerItem, l.config.Concurrency-shard*SlotsPerItem)
}

// retryDelay returns a deferral between Config.RetryDelay and twice it.
func (l *Limiter) retryDelay() time.Duration {
	return l.config.RetryDelay + rand.N(l.config.RetryDelay)
}

// freeSlots returns the slots of item (of size slots) that are empty or whose lease
// ended before now.
func freeSlots(item map[string]types.AttributeValue, slots int, now time.Time) []int {
	var free []int
	for slot := range slots {
		lease, ok := item[slotName(slot)].(*types.AttributeValueMemberM)
		if !ok {
			free = append(free, slot)
			continue
		}
		if until, ok := readNumber(lease.Value[attributeUntil]); !ok || until < now.UnixMilli() {
			free = append(free, slot)
		}
	}
	return free
}

// ownedBy reports whether slot of item is held by holder.
func ownedBy(item map[string]types.AttributeValue, slot int, holder string) bool {
	lease, ok := item[slotName(slot)].(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	owner, ok := lease.Value[attributeHolder].(*types.AttributeValueMemberS)
	return ok && owner.Value == holder
}

func slotName(slot int) string { return slotPrefix + strconv.Itoa(slot) }

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func millis(t time.Time) *types.AttributeValueMemberN { return number(t.UnixMilli()) }

// ttl is the item's TTL attribute value (epoch seconds) for a lease ending at until.
func ttl(until time.Time) *types.AttributeValueMemberN {
	return number(until.Add(ttlMargin).Unix())
}

func readNumber(value types.AttributeValue) (int64, bool) {
	n, ok := value.(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	parsed, err := strconv.ParseInt(n.Value, 10, 64)
	return parsed, err == nil
}
