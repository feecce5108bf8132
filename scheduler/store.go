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

// DynamoDBAPI is the part of the DynamoDB client the scheduler uses (the lease and the
// schedules' state); *dynamodb.Client satisfies it. It needs dynamodb:GetItem, PutItem,
// UpdateItem and TransactWriteItems (ConditionCheck on the lease item) on the table.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// ErrFenced is returned (wrapped) by a write conditioned on the lease when the writer no
// longer holds it: another replica took it over (its token is higher) or it expired.
var ErrFenced = errors.New("scheduler: the lease is no longer held with this token")

// errStateMoved reports a schedule state item that changed under the leader's cached
// copy; the leader reads it again.
var errStateMoved = errors.New("scheduler: the schedule's state changed")

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

func (s *store) leaseKey() map[string]types.AttributeValue { return itemKey(leaseID(s.lease)) }

// readLease reads the lease item (strongly consistent); false when there is none. A
// malformed item is an error matching ErrMalformedItem (found true).
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
	lease, err := decodeLease(s.table, s.lease, out.Item)
	return lease, true, err
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

func isConditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}
