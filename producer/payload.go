package producer

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// PayloadStore moves a message that is too large for SQS out of the message (a claim
// check), for example into S3 in the format of the AWS extended client libraries
// (package claimcheck implements it).
//
// The producer calls Offload only for a message whose size as SQS counts it (body plus
// message attributes, see [Config.OffloadThreshold]) is above the threshold, with the
// queue it is sent to, the body and the message attributes the producer would send.
// Offload returns the body and attributes to send instead (a pointer to the stored
// payload and whatever attributes mark it); the producer checks the result against the
// queue's MaximumMessageSize again. An error fails that one job; the producer returns it
// wrapped and sends nothing.
//
// Offload may be called concurrently, and more than once for the same job when a send is
// retried; implementations must be safe for both.
type PayloadStore interface {
	Offload(ctx context.Context, queueURL string, body string, attrs map[string]types.MessageAttributeValue) (newBody string, newAttrs map[string]types.MessageAttributeValue, err error)
}

// Encrypter encrypts a job's body before it is sent (package encrypt implements it with
// KMS envelope encryption). The producer calls Encrypt once per send, after the job's
// attributes are complete (job id, type, due time) and before the size check and the
// claim check, so an offloaded payload is stored encrypted; it sends the returned body
// with the returned attribute as [sqsworker.AttributeEncryption], which counts toward
// SQS's 10 attributes. An error fails that one job; the producer returns it wrapped and
// sends nothing. Encrypt may be called concurrently.
type Encrypter interface {
	Encrypt(ctx context.Context, body string, attrs map[string]types.MessageAttributeValue) (newBody string, envelope types.MessageAttributeValue, err error)
}
