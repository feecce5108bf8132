package idempotency

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// AttributeNames names the table's attributes. Empty fields take the defaults: the
// table's schema (package table: partition key "id", TTL on "expiration"), which the
// Terraform module and `sqsworker create table` create.
type AttributeNames struct {
	// Key is the string partition key; if empty, table.PartitionKey ("id").
	Key string
	// Status holds "IN_PROGRESS" or "COMPLETED"; if empty, "status".
	Status string
	// Expiration holds the record's expiry in epoch SECONDS (the table's TTL attribute);
	// if empty, table.TTLAttribute ("expiration").
	Expiration string
	// InProgressExpiry holds the in-progress lease's end in epoch MILLISECONDS; if empty,
	// "in_progress_expiry".
	InProgressExpiry string
	// Lease holds the claim's random owner token; if empty, "lease".
	Lease string
	// Validation holds the payload hash; if empty, "validation".
	Validation string
	// Data holds the stored result (binary); if empty, "data".
	Data string
	// Deadline holds the running handler's deadline in epoch MILLISECONDS; if empty,
	// "in_progress_deadline".
	Deadline string
	// Interrupted holds the count of interrupted receives (Record.Interrupted); if empty,
	// "interrupted".
	Interrupted string
	// InterruptedMessage holds the message id that count is for; if empty,
	// "interrupted_message".
	InterruptedMessage string
}

// Default attribute names.
const (
	DefaultKeyAttribute              = table.PartitionKey
	DefaultStatusAttribute           = "status"
	DefaultExpirationAttribute       = table.TTLAttribute
	DefaultInProgressExpiryAttribute = "in_progress_expiry"
	DefaultLeaseAttribute            = "lease"
	DefaultValidationAttribute       = "validation"
	DefaultDataAttribute             = "data"
	DefaultDeadlineAttribute         = "in_progress_deadline"
	DefaultInterruptedAttribute      = "interrupted"
	DefaultInterruptedMessageAttr    = "interrupted_message"
)

func (n AttributeNames) withDefaults() AttributeNames {
	set := func(field *string, value string) {
		if *field == "" {
			*field = value
		}
	}
	set(&n.Key, DefaultKeyAttribute)
	set(&n.Status, DefaultStatusAttribute)
	set(&n.Expiration, DefaultExpirationAttribute)
	set(&n.InProgressExpiry, DefaultInProgressExpiryAttribute)
	set(&n.Lease, DefaultLeaseAttribute)
	set(&n.Validation, DefaultValidationAttribute)
	set(&n.Data, DefaultDataAttribute)
	set(&n.Deadline, DefaultDeadlineAttribute)
	set(&n.Interrupted, DefaultInterruptedAttribute)
	set(&n.InterruptedMessage, DefaultInterruptedMessageAttr)
	return n
}

func (s *DynamoDBStore) key(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{s.names.Key: &types.AttributeValueMemberS{Value: key}}
}

// item encodes a record. Zero times and empty strings are left out, so an in-progress
// record is never written with an empty expiry attribute.
func (s *DynamoDBStore) item(record Record) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		s.names.Key:    &types.AttributeValueMemberS{Value: record.Key},
		s.names.Status: &types.AttributeValueMemberS{Value: string(record.Status)},
		s.names.Lease:  &types.AttributeValueMemberS{Value: record.Lease},
	}
	if !record.ExpiresAt.IsZero() {
		item[s.names.Expiration] = number(record.ExpiresAt.Unix())
	}
	if !record.InProgressExpiresAt.IsZero() {
		item[s.names.InProgressExpiry] = number(record.InProgressExpiresAt.UnixMilli())
	}
	if !record.Deadline.IsZero() {
		item[s.names.Deadline] = number(record.Deadline.UnixMilli())
	}
	if record.PayloadHash != "" {
		item[s.names.Validation] = &types.AttributeValueMemberS{Value: record.PayloadHash}
	}
	if len(record.Result) > 0 {
		item[s.names.Data] = &types.AttributeValueMemberB{Value: record.Result}
	}
	if record.Interrupted > 0 {
		item[s.names.Interrupted] = number(int64(record.Interrupted))
		item[s.names.InterruptedMessage] = &types.AttributeValueMemberS{Value: record.InterruptedMessage}
	}
	return item
}

// record decodes an item, or returns an error matching [ErrMalformedRecord] when the item
// is not an idempotency record: the key, a status of IN_PROGRESS or COMPLETED, the
// expiration and a non-empty lease are required, and every attribute the store uses must
// have its type (S, N or B) and a valid value. The lease expiry, deadline, payload hash
// result and interruption count are optional (an in-progress record without a lease expiry, from an older
// writer, is locked until its expiration). Attributes the store does not use are
// ignored, so a newer writer may add some.
func (s *DynamoDBStore) record(item map[string]types.AttributeValue) (Record, error) {
	var record Record
	var problems []string
	text := func(name string, required bool) string {
		switch value := item[name].(type) {
		case *types.AttributeValueMemberS:
			if required && value.Value == "" {
				problems = append(problems, fmt.Sprintf("%q is empty", name))
			}
			return value.Value
		case nil:
			if required {
				problems = append(problems, fmt.Sprintf("no %q", name))
			}
		default:
			problems = append(problems, fmt.Sprintf("%q is %s, want S", name, typeName(value)))
		}
		return ""
	}
	integer := func(name string, required bool) int64 {
		switch value := item[name].(type) {
		case *types.AttributeValueMemberN:
			n, err := strconv.ParseInt(value.Value, 10, 64)
			if err != nil || n <= 0 {
				problems = append(problems, fmt.Sprintf("%q is %q, want a positive integer", name, value.Value))
			}
			return n
		case nil:
			if required {
				problems = append(problems, fmt.Sprintf("no %q", name))
			}
		default:
			problems = append(problems, fmt.Sprintf("%q is %s, want N", name, typeName(value)))
		}
		return 0
	}
	record.Key = text(s.names.Key, true)
	record.Status = Status(text(s.names.Status, true))
	expiration := integer(s.names.Expiration, true)
	inProgressExpiry := integer(s.names.InProgressExpiry, false)
	deadline := integer(s.names.Deadline, false)
	record.Lease = text(s.names.Lease, true)
	record.PayloadHash = text(s.names.Validation, false)
	record.Interrupted = int(integer(s.names.Interrupted, false))
	record.InterruptedMessage = text(s.names.InterruptedMessage, false)
	switch value := item[s.names.Data].(type) {
	case *types.AttributeValueMemberB:
		if len(value.Value) > 0 {
			record.Result = value.Value
		}
	case nil:
	default:
		problems = append(problems, fmt.Sprintf("%q is %s, want B", s.names.Data, typeName(value)))
	}
	if record.Status != "" && record.Status != StatusInProgress && record.Status != StatusCompleted {
		problems = append(problems, fmt.Sprintf("%q is %q, want %q or %q", s.names.Status, record.Status, StatusInProgress, StatusCompleted))
	}
	if len(problems) > 0 {
		return Record{}, fmt.Errorf("%w: %s (attributes: %s)", ErrMalformedRecord, strings.Join(problems, "; "), attributeList(item))
	}
	record.ExpiresAt = time.Unix(expiration, 0).UTC()
	if inProgressExpiry != 0 {
		record.InProgressExpiresAt = time.UnixMilli(inProgressExpiry).UTC()
	}
	if deadline != 0 {
		record.Deadline = time.UnixMilli(deadline).UTC()
	}
	return record, nil
}

// attributeList renders an item's attribute names and types ("id:S, owner:S"), sorted,
// without values: enough to recognise whose item it is without logging its contents.
func attributeList(item map[string]types.AttributeValue) string {
	list := make([]string, 0, len(item))
	for name, value := range item {
		list = append(list, name+":"+typeName(value))
	}
	slices.Sort(list)
	return strings.Join(list, ", ")
}

func typeName(value types.AttributeValue) string {
	switch value.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return fmt.Sprintf("%T", value)
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
