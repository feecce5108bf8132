package sqsinfo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueARN is a parsed queue ARN, "arn:PARTITION:sqs:REGION:ACCOUNT:NAME".
type QueueARN struct {
	Partition, Region, Account, Name string
}

// ParseQueueARN parses an SQS queue ARN. An ARN with an empty partition, region, account
// or name is an error, as is another service's ARN or a resource with a path.
func ParseQueueARN(arn string) (QueueARN, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" {
		return QueueARN{}, fmt.Errorf("sqsinfo: %q is not an SQS queue ARN", arn)
	}
	parsed := QueueARN{Partition: parts[1], Region: parts[3], Account: parts[4], Name: parts[5]}
	if parsed.Partition == "" || parsed.Region == "" || parsed.Account == "" || parsed.Name == "" || strings.Contains(parsed.Name, "/") {
		return QueueARN{}, fmt.Errorf("sqsinfo: %q is not an SQS queue ARN", arn)
	}
	return parsed, nil
}

// String returns the ARN in its text form.
func (a QueueARN) String() string {
	return "arn:" + a.Partition + ":sqs:" + a.Region + ":" + a.Account + ":" + a.Name
}

// FIFO reports whether the queue is a FIFO queue (its name ends in ".fifo").
func (a QueueARN) FIFO() bool { return IsFIFOName(a.Name) }

// URL returns the queue's URL in the form SQS documents,
// "https://sqs.REGION.amazonaws.com/ACCOUNT/NAME" ("amazonaws.com.cn" in the aws-cn
// partition). It is the URL of the public endpoint; a client pointed elsewhere (an
// emulator, a VPC endpoint) still accepts it, since SQS routes by account and name.
func (a QueueARN) URL() string {
	domain := "amazonaws.com"
	if a.Partition == "aws-cn" {
		domain = "amazonaws.com.cn"
	}
	return "https://sqs." + a.Region + "." + domain + "/" + a.Account + "/" + a.Name
}

// IsFIFOName reports whether a queue name, URL or ARN names a FIFO queue.
func IsFIFOName(ref string) bool { return strings.HasSuffix(ref, ".fifo") }

// QueueURLAPI is the part of the SQS client [ResolveQueueURL] uses.
type QueueURLAPI interface {
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ QueueURLAPI = (*sqs.Client)(nil)

// ErrQueueNotFound is returned (wrapped) when a queue name, URL or ARN names no queue.
var ErrQueueNotFound = errors.New("queue does not exist")

// ResolveQueueURL resolves ref to a queue URL. ref is a queue URL (returned as is), a
// queue ARN (resolved with GetQueueUrl by name in the ARN's account) or a queue name
// (resolved with GetQueueUrl in the caller's account). A queue that does not exist gives
// an error matching [ErrQueueNotFound].
func ResolveQueueURL(ctx context.Context, api QueueURLAPI, ref string) (string, error) {
	if ref == "" {
		return "", errors.New("sqsinfo: empty queue name")
	}
	if strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "http://") {
		return ref, nil
	}
	input := &sqs.GetQueueUrlInput{QueueName: aws.String(ref)}
	if strings.HasPrefix(ref, "arn:") {
		arn, err := ParseQueueARN(ref)
		if err != nil {
			return "", err
		}
		input = &sqs.GetQueueUrlInput{QueueName: aws.String(arn.Name), QueueOwnerAWSAccountId: aws.String(arn.Account)}
	}
	output, err := api.GetQueueUrl(ctx, input)
	if err != nil {
		return "", QueueError(ref, err)
	}
	return aws.ToString(output.QueueUrl), nil
}

// QueueError wraps an SQS error about the queue ref: one matching [ErrQueueNotFound] when
// SQS says the queue does not exist, "queue REF: ERR" otherwise.
func QueueError(ref string, err error) error {
	if IsQueueNotFound(err) {
		return fmt.Errorf("%w: %s (%w)", ErrQueueNotFound, ref, err)
	}
	return fmt.Errorf("queue %s: %w", ref, err)
}

// IsQueueNotFound reports whether err is, or wraps, SQS's "queue does not exist" error.
// The JSON protocol names it QueueDoesNotExist; some endpoints answer
// AWS.SimpleQueueService.NonExistentQueue.
func IsQueueNotFound(err error) bool {
	if errors.Is(err, ErrQueueNotFound) {
		return true
	}
	if _, ok := errors.AsType[*types.QueueDoesNotExist](err); ok {
		return true
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		code := coded.ErrorCode()
		return code == "AWS.SimpleQueueService.NonExistentQueue" || code == "QueueDoesNotExist"
	}
	return false
}
