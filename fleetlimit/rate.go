package fleetlimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// attributeTAT is a rate item's theoretical arrival time: epoch microseconds.
const attributeTAT = "tat"

// reserveTries bounds the writes of one Reserve.
const reserveTries = 4

// Reserve takes a start of key's rate: the instant at which the caller may start, from
// Config.StartLead to Config.StartLead + MaxWait ahead. It is the generic cell rate algorithm (GCRA, the token
// bucket as the ATM Forum's virtual scheduling states it) kept in one item per key (or
// per shard of a key, Config.RateShards, each granting its share of the rate): the
// item holds the theoretical arrival time TAT, and a start is granted at max(t, TAT −
// τ) by moving TAT to max(TAT, t) + T, where t is now + StartLead, T is 1/(0.95 ×
// Rate) and τ is (Burst−1) × T. Each grant is one conditional write whose condition is the case it computes:
// "TAT ≤ t" (the bucket is idle: TAT becomes t + T) or "t < TAT ≤ t + τ + MaxWait"
// (TAT grows by T, server-side). Every granted write moves TAT by at least T,
// so the grants of any window of length W number at most W/T + Burst, whoever made
// them, with no read before the write (no check-then-act). A write whose condition
// failed returns the item's TAT, which picks the other case; the key's last TAT is
// cached, so under load the first write is usually the right one. When the start would
// lie more than MaxWait ahead it returns a [*BusyError] whose RetryAfter is when it
// falls due.
func (l *Limiter) Reserve(ctx context.Context, key string) (time.Time, error) {
	shard := rand.IntN(l.config.RateShards)
	item, err := table.LimitRateKey(l.config.Name, shard, key)
	if err != nil {
		return time.Time{}, err
	}
	tat := l.cachedTAT(item)
	maxWait := l.config.MaxWait.Microseconds()
	var now int64 // t above
	for try := range reserveTries {
		// After a failed idle write the item's TAT is ahead of that write's t, so the
		// next write keeps t and takes the busy case, which no other writer's grant
		// can make fail (TAT only grows); a fresh t could find the bucket idle again
		// and lose the same race again.
		if try == 0 || tat <= now {
			now = l.config.Now().Add(l.config.StartLead).UnixMicro()
		}
		idle := tat <= now
		if !idle && tat-l.tolerance-now > maxWait {
			return time.Time{}, l.rateBusy(key, tat-l.tolerance-now)
		}
		input := &dynamodb.UpdateItemInput{
			TableName:                           aws.String(l.config.Table),
			Key:                                 table.KeyAttribute(item),
			ExpressionAttributeNames:            map[string]string{"#tat": attributeTAT, "#ttl": table.TTLAttribute},
			ReturnValues:                        types.ReturnValueUpdatedNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if idle {
			input.UpdateExpression = aws.String("SET #tat = :next, #ttl = :ttl")
			input.ConditionExpression = aws.String("attribute_not_exists(#tat) OR #tat <= :now")
			input.ExpressionAttributeValues = map[string]types.AttributeValue{
				":next": number(now + l.interval), ":now": number(now), ":ttl": l.rateTTL(now + l.interval),
			}
		} else {
			input.UpdateExpression = aws.String("SET #tat = #tat + :interval, #ttl = :ttl")
			input.ConditionExpression = aws.String("#tat > :now AND #tat <= :latest")
			input.ExpressionAttributeValues = map[string]types.AttributeValue{
				":interval": number(l.interval), ":now": number(now), ":latest": number(now + l.tolerance + maxWait),
				":ttl": l.rateTTL(now + l.tolerance + maxWait + l.interval),
			}
		}
		output, err := l.api.UpdateItem(ctx, input)
		if err == nil {
			next, _ := readNumber(output.Attributes[attributeTAT])
			l.cacheTAT(item, next)
			return time.UnixMicro(max(now, next-l.interval-l.tolerance)), nil
		}
		failed, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
		if !ok {
			return time.Time{}, fmt.Errorf("fleetlimit: taking a start of limit %s, key %q: %w", l.config.Name, key, err)
		}
		tat, _ = readNumber(failed.Item[attributeTAT]) // 0 (idle) when the item is gone
		l.cacheTAT(item, tat)
	}
	return time.Time{}, l.rateBusy(key, max(tat-l.tolerance-l.config.Now().UnixMicro(), l.interval))
}

func (l *Limiter) rateBusy(key string, wait int64) *BusyError {
	return &BusyError{Limit: l.config.Name, Key: key, Kind: "rate", RetryAfter: time.Duration(wait) * time.Microsecond}
}

// rateTTL is the TTL of a rate item whose TAT is at most tat (epoch microseconds): the
// item is idle from then on, and its deletion changes nothing.
func (l *Limiter) rateTTL(tat int64) *types.AttributeValueMemberN {
	return ttl(time.UnixMicro(tat))
}

func (l *Limiter) cachedTAT(item string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tats[item]
}

func (l *Limiter) cacheTAT(item string, tat int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.tats) >= maxCachedKeys {
		clear(l.tats)
	}
	l.tats[item] = tat
}
