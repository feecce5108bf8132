// Package e2e holds end-to-end tests that need several packages at once: the poller and
// the idempotency middleware together, on the local emulator (LocalStack SQS, moto
// DynamoDB): a killed worker's lease taken over, a duplicate deferred while the original
// runs, an undeleted message that returns and is skipped, and the drain that releases
// the record and the message. It has no non-test code.
package e2e
