// Package idempotency runs a handler at most once per key at a time, and not again once
// it has succeeded, on top of SQS's at-least-once delivery.
//
//	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), "webhook-idempotency")
//	handler := sqsworker.Chain(deliver, idempotency.Middleware(store, idempotency.Config{
//		KeyFunc:     idempotency.KeyFromJSONField("deliveryId"),
//		PayloadHash: idempotency.HashJSONFields("url", "payload"),
//		KeyPrefix:   "webhook",
//	}))
//	// in the handler, optionally: idempotency.SetResult(ctx, responseBytes)
//
// # Records
//
// Each key has one [Record]. A claim writes it IN_PROGRESS with a random lease token, a
// short lease end (Config.InProgressTTL, 10 s, renewed by a heartbeat while the handler
// runs, never past its context's deadline) and that deadline; success turns it COMPLETED until its
// expiration (Config.TTL after completion); a handler error deletes it. Every update and
// delete is conditioned on the lease token, so a run whose lease ended and was taken
// over can no longer touch the record, and a rejected duplicate never touches it at all.
// Expiry is computed in code at every claim (see [Record.Claimable]); DynamoDB TTL only
// cleans up. Lease ends are absolute times compared across hosts, so keep host clocks
// synchronised (NTP): skew beyond Config.ClockSkewAllowance (2 s) lengthens or shortens leases by as much.
//
// # Outcomes for duplicates
//
//   - COMPLETED with the same payload hash: the handler is skipped; nil (or what
//     Config.OnCompletedDuplicate returns).
//   - IN_PROGRESS under a live lease: waits in process up to 5 s for the original; then
//     [sqsworker.Defer] until the original's deadline, or until its lease can be taken
//     over when it stopped renewing (plus up to 2 s jitter); counted as deferred.
//   - a different payload hash, whatever the status: [sqsworker.Permanent] with reason
//     "IdempotencyPayloadMismatch"; the message goes to the dead-letter queue.
//
// Every decision (claimed, bypassed for a missing key, deferred, completed duplicate,
// store error, ...) is told to Config.Observer as an [Event]; package
// github.com/sqsworker/sqsworker/otelsqsworker/otelidempotency counts them as metrics.
//
// # DynamoDB table
//
// The table of package github.com/sqsworker/sqsworker/table, which unique jobs and the
// scheduler may share: the string partition key "id" and, preferably, TTL enabled on
// "expiration" (`sqsworker create table`, or the Terraform module
// infra/terraform/modules/idempotency-table). Every record's key is in the table's
// idempotency namespace ([StoredKey]: "idempotency#" + Config.KeyPrefix + "#" + key), so
// no key a sender chooses names another subsystem's item, and two middlewares with
// different prefixes never share records. (Stored keys changed to this form before 1.0:
// records written by earlier versions, "PREFIX#KEY" or "KEY", are no longer found, so a
// duplicate of a message completed before the upgrade may run once more.)
//
// Attributes (names configurable with [WithAttributeNames]): "status" ("IN_PROGRESS" or
// "COMPLETED"), "expiration" (epoch seconds), "in_progress_expiry" (epoch milliseconds),
// "in_progress_deadline" (epoch milliseconds), "lease", "validation" (payload hash) and
// "data" (the result, binary). An item under a record's key that lacks the key, status,
// expiration or lease, or has an attribute of the wrong type, is not a record
// ([ErrMalformedRecord]): the middleware logs it and fails the message (retryable)
// without running the handler, never taking it for a claim in progress. A result that
// would make the record larger than DynamoDB's 400 KB item limit is left out: the record
// completes without it (one warning line). The store needs dynamodb:PutItem, GetItem,
// UpdateItem and DeleteItem.
//
// # Logs
//
// Config.Logger (slog.Default() if nil) gets the decisions: a suppressed duplicate leaves
// one info line ([LogCompletedDuplicate]), a deferral one, store failures a warning,
// a malformed item or a lost lease an error. Bodies are never logged.
package idempotency
