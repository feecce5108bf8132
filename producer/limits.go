package producer

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// queueLimits is what the producer knows about one queue.
type queueLimits struct {
	url     string
	fifo    bool
	maxSize int
}

// limits returns what the producer knows about queueURL, reading its attributes once:
// concurrent first sends to a queue wait for one GetQueueAttributes. A failed read is
// not kept, so the next send tries again.
func (p *Producer) limits(ctx context.Context, queueURL string) (*queueLimits, error) {
	p.mu.Lock()
	entry, ok := p.queues[queueURL]
	if !ok {
		entry = &queueEntry{ready: make(chan struct{})}
		p.queues[queueURL] = entry
	}
	p.mu.Unlock()
	if ok {
		select {
		case <-entry.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("producer: waiting for the attributes of %s: %w", queueURL, ctx.Err())
		}
		if entry.err != nil {
			return nil, entry.err
		}
		return entry.limits, nil
	}
	entry.limits, entry.err = p.readLimits(ctx, queueURL)
	if entry.err != nil {
		p.mu.Lock()
		delete(p.queues, queueURL)
		p.mu.Unlock()
	}
	close(entry.ready)
	return entry.limits, entry.err
}

// queueEntry is one queue's limits, or the read in progress (until ready is closed).
type queueEntry struct {
	ready  chan struct{}
	limits *queueLimits
	err    error
}

// readLimits reads queueURL's MaximumMessageSize with GetQueueAttributes.
func (p *Producer) readLimits(ctx context.Context, queueURL string) (*queueLimits, error) {
	output, err := p.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize},
	})
	if err != nil {
		return nil, fmt.Errorf("producer: reading MaximumMessageSize of %s: %w", queueURL, err)
	}
	limits := &queueLimits{url: queueURL, fifo: isFIFO(queueURL), maxSize: sqsinfo.DefaultMaximumMessageSize}
	if text, ok := output.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]; ok {
		size, err := strconv.Atoi(text)
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("producer: queue %s: MaximumMessageSize %q is not a positive number", queueURL, text)
		}
		limits.maxSize = size
	}
	return limits, nil
}

// isFIFO reports whether queueURL names a FIFO queue: SQS requires FIFO queue names to
// end in ".fifo", and no standard queue's name may.
func isFIFO(queueURL string) bool {
	return sqsinfo.IsFIFOName(queueURL)
}
