// Package table declares the one DynamoDB table that idempotency records, unique jobs and
// the scheduler share: its partition key, its TTL attribute, the namespaces that divide
// its items among those users, the client interface they call it through, and the
// construction of every item's key.
//
// # Schema
//
// A table with the string partition key [PartitionKey] ("id") and no sort key, with
// DynamoDB TTL enabled on [TTLAttribute] ("expiration", epoch seconds). The Terraform
// module infra/terraform/modules/idempotency-table and `sqsworker create table` create
// exactly this; their tests compare their names with these constants.
//
// # Namespaces
//
// Every item's key starts with its namespace and "#": [Idempotency], [Unique],
// [Scheduler], [Limits] (the fleet-wide limits of package fleetlimit), [JobRecords]
// (package jobs) and [Batches] (package batches) today, and [Cancellation] reserved.
// [Key] builds every key, and no namespace name contains "#", so the text before a key's first "#" names its namespace:
// keys of two namespaces never equal each other and neither is a prefix of the other,
// whatever their parts hold. A sender who chooses a message's idempotency key therefore
// chooses a key inside the idempotency namespace and nothing else: "unique#order-42" as an
// idempotency key is stored as "idempotency##unique#order-42", never as the unique job's
// item "unique#order-42".
//
// Within a namespace, each layout has a fixed number of parts and only the last may
// contain "#", so distinct parts give distinct keys ([IdempotencyKey], [UniqueKey],
// [JobRecordKey], [SchedulerLeaseKey], [SchedulerScheduleKey], [LimitPermitsKey],
// [LimitRateKey], [BatchKey], [BatchShardKey] and [BatchJobKey] are the layouts; a new user adds its own helper here).
//
// Keys are at most [MaxKeyBytes] (DynamoDB's 2048-byte partition key limit) of valid
// UTF-8: DynamoDB strings are UTF-8, and the SDK would send each invalid byte as U+FFFD,
// so two different keys could name one item.
//
// # Items
//
// [ItemSize] counts an item as DynamoDB does for its 400 KB item limit ([MaxItemBytes]):
// the UTF-8 bytes of each attribute's name plus its value. Writers check it before
// writing, so an item that cannot be stored is decided in code, not by a failed call.
//
// See "Constraints in Amazon DynamoDB" (partition key length, item size) and "DynamoDB
// item sizes and formats" in the DynamoDB developer guide.
package table
