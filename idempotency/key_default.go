package idempotency

import "github.com/sqsworker/sqsworker"

// KeyFromProducer is the default [KeyFunc]: the message attribute
// [sqsworker.AttributeIdempotencyKey] ("idempotency-key", which package producer sets
// from Job.IdempotencyKey) when the message carries it, and the SQS message id
// ([KeyFromMessageID]) otherwise.
func KeyFromProducer(message *sqsworker.Message) (string, error) {
	if key, err := KeyFromMessageAttribute(sqsworker.AttributeIdempotencyKey)(message); err == nil {
		return key, nil
	}
	return KeyFromMessageID(message)
}
