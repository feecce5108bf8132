package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// The record's attribute names (besides table.PartitionKey and table.TTLAttribute).
const (
	attrJobID      = "job_id"
	attrState      = "state"
	attrType       = "job_type"
	attrQueue      = "queue"
	attrAttempts   = "attempts"
	attrEnqueued   = "enqueued_at"
	attrFirstStart = "first_start"
	attrLastStart  = "last_start"
	attrUpdated    = "updated_at"
	attrLastError  = "last_error"
	attrResult     = "result"
	attrResultRef  = "result_ref"
	attrProgress   = "progress"
	attrCancel     = "cancel_requested"
	attrPayloadKey = "payload_key"
)

// names maps the expression placeholders to the attribute names, for every expression
// (DynamoDB refuses unused ones, so each expression takes only those it uses).
func names(attributes ...string) map[string]string {
	out := make(map[string]string, len(attributes))
	for _, name := range attributes {
		out["#"+name] = name
	}
	return out
}

func str(value string) types.AttributeValue { return &types.AttributeValueMemberS{Value: value} }

func num(value int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(value, 10)}
}

func millis(t time.Time) types.AttributeValue { return num(t.UnixMilli()) }

// record decodes an item. Attributes it does not know are ignored; a known attribute of
// the wrong type is an error.
func record(item map[string]types.AttributeValue) (Record, error) {
	var r Record
	var errs []error
	text := func(name string) string {
		value, ok := item[name]
		if !ok {
			return ""
		}
		s, ok := value.(*types.AttributeValueMemberS)
		if !ok {
			errs = append(errs, fmt.Errorf("attribute %s is not a string", name))
			return ""
		}
		return s.Value
	}
	number := func(name string) int64 {
		value, ok := item[name]
		if !ok {
			return 0
		}
		n, ok := value.(*types.AttributeValueMemberN)
		if !ok {
			errs = append(errs, fmt.Errorf("attribute %s is not a number", name))
			return 0
		}
		parsed, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", name, err))
		}
		return parsed
	}
	when := func(name string) time.Time {
		if ms := number(name); ms != 0 {
			return time.UnixMilli(ms).UTC()
		}
		return time.Time{}
	}
	r.ID = text(attrJobID)
	r.State = State(text(attrState))
	r.Type, r.Queue = text(attrType), text(attrQueue)
	r.PayloadKey = text(attrPayloadKey)
	r.Attempts = int(number(attrAttempts))
	r.EnqueuedAt, r.FirstStartedAt, r.LastStartedAt, r.UpdatedAt = when(attrEnqueued), when(attrFirstStart), when(attrLastStart), when(attrUpdated)
	r.LastError = text(attrLastError)
	if result := text(attrResult); result != "" {
		r.Result = []byte(result)
	}
	if value, ok := item[attrResultRef]; ok {
		ref, err := resultRef(value)
		if err != nil {
			errs = append(errs, err)
		}
		r.ResultRef = ref
	}
	if progress := text(attrProgress); progress != "" {
		r.Progress = []byte(progress)
	}
	if cancel, ok := item[attrCancel].(*types.AttributeValueMemberBOOL); ok {
		r.CancelRequested = cancel.Value
	}
	if seconds := number(table.TTLAttribute); seconds != 0 {
		r.ExpiresAt = time.Unix(seconds, 0).UTC()
	}
	if r.State == "" {
		errs = append(errs, errors.New("no state"))
	}
	if len(errs) > 0 {
		return Record{}, fmt.Errorf("%w: %w", ErrMalformedRecord, errors.Join(errs...))
	}
	return r, nil
}

// resultRef decodes the result_ref attribute: a map of bucket, key, size and sha256.
func resultRef(value types.AttributeValue) (*ResultRef, error) {
	m, ok := value.(*types.AttributeValueMemberM)
	if !ok {
		return nil, fmt.Errorf("attribute %s is not a map", attrResultRef)
	}
	field := func(name string) string {
		if s, ok := m.Value[name].(*types.AttributeValueMemberS); ok {
			return s.Value
		}
		return ""
	}
	size, ok := m.Value["size"].(*types.AttributeValueMemberN)
	if !ok {
		return nil, fmt.Errorf("attribute %s has no size", attrResultRef)
	}
	n, err := strconv.ParseInt(size.Value, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("attribute %s: size: %w", attrResultRef, err)
	}
	ref := &ResultRef{Bucket: field("bucket"), Key: field("key"), Size: n, SHA256: field("sha256")}
	if ref.Bucket == "" || ref.Key == "" {
		return nil, fmt.Errorf("attribute %s has no bucket or key", attrResultRef)
	}
	return ref, nil
}
