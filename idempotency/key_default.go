package idempotency

import "github.com/sqsworker/sqsworker"

// KeyFromProducer is the default [KeyFunc]: the message attribute
// [sqsworker.AttributeIdempotencyKey] ("idempotency-key", which package producer sets
// from Job.IdempotencyKey) when the message carries it, else its job id
// ([sqsworker.AttributeJobID], which package producer gives every job: it stays the
// same through delay hops, the host's dead-letter send and redrives, where the message
// id changes, and a job record finds the idempotency record by it), else the SQS
// message id ([KeyFromMessageID]).
func KeyFromProducer(message *sqsworker.Message) (string, error) {
	if key, err := KeyFromMessageAttribute(sqsworker.AttributeIdempotencyKey)(message); err == nil {
		return key, nil
	}
	if key := message.JobID(); key != "" {
		return key, nil
	}
	return KeyFromMessageID(message)
}
