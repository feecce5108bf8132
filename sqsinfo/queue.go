package sqsinfo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAttributesAPI is the part of the SQS client that [LoadQueue] uses (and
// [ResolveQueueURL]). *sqs.Client satisfies it.
type QueueAttributesAPI interface {
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, input *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ QueueAttributesAPI = (*sqs.Client)(nil)

// RedrivePolicy is a queue's RedrivePolicy attribute: after MaxReceiveCount receives
// without a delete, SQS moves the message to the dead-letter queue DeadLetterTargetARN.
type RedrivePolicy struct {
	DeadLetterTargetARN string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// Queue is what a worker needs to know about a source queue, read once at start.
type Queue struct {
	// URL is the queue's URL, as given to [LoadQueue].
	URL string
	// ARN is the queue's ARN (its QueueArn attribute).
	ARN string
	// FIFO is true for a FIFO queue (name ending in ".fifo").
	FIFO bool
	// VisibilityTimeout is the queue's default visibility timeout (0 s to 12 h).
	VisibilityTimeout time.Duration
	// MaximumMessageSize is the largest message the queue accepts, in bytes (1 KiB to 1 MiB).
	MaximumMessageSize int
	// RedrivePolicy is nil when the queue has none: failed messages then retry forever.
	RedrivePolicy *RedrivePolicy
	// DeadLetterQueueURL is the URL of the redrive policy's dead-letter queue, or "".
	DeadLetterQueueURL string
	// DeadLetterQueueFIFO is true when the dead-letter queue is a FIFO queue.
	DeadLetterQueueFIFO bool
}

// LoadQueue reads queueURL's attributes (GetQueueAttributes) and, when it has a redrive
// policy, resolves the dead-letter queue's URL (GetQueueUrl with the name and account
// from its ARN). Errors from SQS are returned wrapped, prefixed "sqsinfo: ".
func LoadQueue(ctx context.Context, api QueueAttributesAPI, queueURL string) (*Queue, error) {
	output, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsinfo: reading attributes of queue %s: %w", queueURL, err)
	}
	attributes := output.Attributes
	queue := &Queue{
		URL:  queueURL,
		ARN:  attributes[string(types.QueueAttributeNameQueueArn)],
		FIFO: attributes[string(types.QueueAttributeNameFifoQueue)] == "true",
	}
	if value := attributes[string(types.QueueAttributeNameVisibilityTimeout)]; value != "" {
		seconds, err := strconv.Atoi(value)
		if err != nil {
			return nil, fmt.Errorf("sqsinfo: queue %s: VisibilityTimeout %q is not a number", queueURL, value)
		}
		queue.VisibilityTimeout = time.Duration(seconds) * time.Second
	}
	if value := attributes[string(types.QueueAttributeNameMaximumMessageSize)]; value != "" {
		size, err := strconv.Atoi(value)
		if err != nil {
			return nil, fmt.Errorf("sqsinfo: queue %s: MaximumMessageSize %q is not a number", queueURL, value)
		}
		queue.MaximumMessageSize = size
	}
	policy := attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if policy == "" {
		return queue, nil
	}
	queue.RedrivePolicy, err = parseRedrivePolicy(policy)
	if err != nil {
		return nil, fmt.Errorf("sqsinfo: queue %s: %w", queueURL, err)
	}
	dlq, err := ParseQueueARN(queue.RedrivePolicy.DeadLetterTargetARN)
	if err != nil {
		return nil, fmt.Errorf("sqsinfo: queue %s: redrive policy: %w", queueURL, err)
	}
	name, account := dlq.Name, dlq.Account
	urlOutput, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{
		QueueName:              aws.String(name),
		QueueOwnerAWSAccountId: aws.String(account),
	})
	if err != nil {
		return nil, fmt.Errorf("sqsinfo: resolving dead-letter queue %s of %s: %w", name, queueURL, err)
	}
	queue.DeadLetterQueueURL = aws.ToString(urlOutput.QueueUrl)
	queue.DeadLetterQueueFIFO = IsFIFOName(name)
	return queue, nil
}

// parseRedrivePolicy decodes the RedrivePolicy attribute. SQS has returned
// maxReceiveCount both as a number and as a string, so both are accepted.
func parseRedrivePolicy(text string) (*RedrivePolicy, error) {
	var raw struct {
		DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("redrive policy %q is not JSON: %w", text, err)
	}
	count, err := strconv.Atoi(strings.Trim(string(raw.MaxReceiveCount), `"`))
	if err != nil || count < 1 {
		return nil, fmt.Errorf("redrive policy %q: maxReceiveCount is not a positive number", text)
	}
	return &RedrivePolicy{DeadLetterTargetARN: raw.DeadLetterTargetARN, MaxReceiveCount: count}, nil
}

// AttributesAPI is the part of the SQS client [QueueDepth] uses.
type AttributesAPI interface {
	GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Depth is a queue's approximate message counts, as GetQueueAttributes reports them.
type Depth struct {
	// Visible is ApproximateNumberOfMessages: available for receive.
	Visible int
	// InFlight is ApproximateNumberOfMessagesNotVisible: received, not yet deleted.
	InFlight int
	// Delayed is ApproximateNumberOfMessagesDelayed: sent with a delay not yet over.
	Delayed int
}

// Total is every message the queue holds: visible, in flight and delayed.
func (d Depth) Total() int { return d.Visible + d.InFlight + d.Delayed }

// QueueDepth reads the queue's approximate counts (one GetQueueAttributes call). SQS
// documents them as approximate: a count can lag a send or delete by a short while.
func QueueDepth(ctx context.Context, api AttributesAPI, queueURL string) (Depth, error) {
	output, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return Depth{}, QueueError(queueURL, err)
	}
	number := func(name types.QueueAttributeName) int {
		value, _ := strconv.Atoi(output.Attributes[string(name)])
		return value
	}
	return Depth{
		Visible:  number(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: number(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  number(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}, nil
}
