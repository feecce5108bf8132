package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/table"
)

// update is one UpdateItem of a record: SET clauses with their names and values.
type update struct {
	sets      []string
	removes   []string
	names     []string
	values    map[string]types.AttributeValue
	condition string
}

// set adds "#name = :name" (or the expression given) for attribute name.
func (u *update) set(name string, value types.AttributeValue, expression ...string) {
	clause := "#" + name + " = :" + name
	if len(expression) > 0 {
		clause = "#" + name + " = " + expression[0]
	}
	u.sets = append(u.sets, clause)
	u.names = append(u.names, name)
	if u.values == nil {
		u.values = map[string]types.AttributeValue{}
	}
	if value != nil {
		u.values[":"+name] = value
	}
}

// remove adds "REMOVE #name" for attribute name.
func (u *update) remove(name string) {
	u.removes = append(u.removes, "#"+name)
	u.names = append(u.names, name)
}

// run sends the update of job id's record; the new record is returned, or on a failed
// condition the old one (nil when there was none) with conflict true.
func (s *Store) run(ctx context.Context, id string, u *update) (item map[string]types.AttributeValue, conflict bool, err error) {
	k, err := key(id)
	if err != nil {
		return nil, false, err
	}
	now := s.config.Now()
	u.set(attrJobID, str(id))
	u.set(attrUpdated, millis(now))
	u.set(table.TTLAttribute, s.expiration(now))
	expression := "SET " + strings.Join(u.sets, ", ")
	if len(u.removes) > 0 {
		expression += " REMOVE " + strings.Join(u.removes, ", ")
	}
	input := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.config.Table), Key: k,
		UpdateExpression:          aws.String(expression),
		ExpressionAttributeNames:  names(u.names...),
		ExpressionAttributeValues: u.values,
		ReturnValues:              types.ReturnValueAllNew,
	}
	if u.condition != "" {
		input.ConditionExpression = aws.String(u.condition)
		input.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	out, err := s.api.UpdateItem(ctx, input)
	if failed, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		if len(failed.Item) == 0 { // an emulator that leaves the old item out: read it
			got, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.config.Table), Key: k, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return nil, true, fmt.Errorf("jobs: reading job %s after a failed condition: %w", id, err)
			}
			return got.Item, true, nil
		}
		return failed.Item, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("jobs: writing job %s: %w", id, err)
	}
	return out.Attributes, false, nil
}

// start records an attempt's start, conditioned on no cancellation request. It returns
// the record and started false when the job was cancelled (then nothing was written).
func (s *Store) start(ctx context.Context, id, jobType, queueURL, payloadKey string) (Record, bool, error) {
	u := &update{condition: "attribute_not_exists(#" + attrCancel + ") OR #" + attrCancel + " = :no"}
	now := s.config.Now()
	u.set(attrState, str(string(StateRunning)))
	u.set(attrAttempts, num(1), "if_not_exists(#"+attrAttempts+", :zero) + :"+attrAttempts)
	u.values[":zero"] = num(0)
	u.values[":no"] = &types.AttributeValueMemberBOOL{Value: false}
	u.set(attrFirstStart, millis(now), "if_not_exists(#"+attrFirstStart+", :"+attrFirstStart+")")
	u.set(attrLastStart, millis(now))
	u.names = append(u.names, attrCancel)
	if jobType != "" {
		u.set(attrType, str(jobType))
	}
	if queueURL != "" {
		u.set(attrQueue, str(queueURL))
	}
	if payloadKey != "" {
		u.set(attrPayloadKey, str(payloadKey))
	}
	item, conflict, err := s.run(ctx, id, u)
	if err != nil {
		return Record{}, false, err
	}
	r, err := record(item)
	if err != nil {
		return Record{}, false, fmt.Errorf("jobs: job %s: %w", id, err)
	}
	return r, !conflict, nil
}

// finish records an attempt's end: state, and the error text, result (a document or a
// reference to one in S3, replacing an earlier attempt's of either kind) and progress
// when given.
func (s *Store) finish(ctx context.Context, id string, state State, errorText string, result []byte, ref *ResultRef, progress []byte) error {
	u := &update{}
	u.set(attrState, str(string(state)))
	if errorText != "" {
		u.set(attrLastError, str(settle.TruncateUTF8(errorText, MaxErrorBytes)))
	}
	switch {
	case ref != nil:
		u.set(attrResultRef, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"bucket": str(ref.Bucket), "key": str(ref.Key), "size": num(ref.Size), "sha256": str(ref.SHA256),
		}})
		u.remove(attrResult)
	case len(result) > 0:
		u.set(attrResult, str(string(result)))
		u.remove(attrResultRef)
	}
	if len(progress) > 0 {
		u.set(attrProgress, str(string(progress)))
	}
	_, _, err := s.run(ctx, id, u)
	return err
}

// progress records a progress document.
func (s *Store) progress(ctx context.Context, id string, document []byte) error {
	u := &update{}
	u.set(attrProgress, str(string(document)))
	_, _, err := s.run(ctx, id, u)
	return err
}

// cancelRequested reads whether job id's record asks for its cancellation (an
// eventually consistent read of one attribute: half a read unit).
func (s *Store) cancelRequested(ctx context.Context, id string) (bool, error) {
	k, err := key(id)
	if err != nil {
		return false, err
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.config.Table), Key: k,
		ProjectionExpression: aws.String("#" + attrCancel), ExpressionAttributeNames: names(attrCancel),
	})
	if err != nil {
		return false, fmt.Errorf("jobs: reading job %s's cancellation: %w", id, err)
	}
	cancel, _ := out.Item[attrCancel].(*types.AttributeValueMemberBOOL)
	return cancel != nil && cancel.Value, nil
}
