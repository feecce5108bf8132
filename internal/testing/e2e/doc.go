// Package e2e holds end-to-end tests that need several packages at once: the poller and
// the idempotency middleware together, on the local emulator (LocalStack SQS, moto
// DynamoDB), for the scenarios C06 (ECS variant), C10, C12 and C15 of ../shared/CASES.md.
// It has no non-test code.
package e2e
