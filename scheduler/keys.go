package scheduler

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// The ids of the scheduler's items in its table (string partition key "id"). They are
// built here and nowhere else, so the table's key layout is decided in one place.
const (
	leasePrefix    = "scheduler#lease#"
	schedulePrefix = "scheduler#schedule#"
)

// leaseID is the id of the lease item of the lease named name.
func leaseID(name string) string { return leasePrefix + name }

// stateID is the id of a schedule's state item.
func stateID(schedule string) string { return schedulePrefix + schedule }

// itemKey is the primary key of the item with id.
func itemKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrID: &types.AttributeValueMemberS{Value: id}}
}
