// Package hosttest holds the conformance tests both hosts pass: the same handler
// results driven through the poller and the Lambda adapter give the same SQS effects,
// the same outcomes and the same observer events (watermill's pubsub/tests pattern,
// applied to hosts). It has no code of its own.
package hosttest
