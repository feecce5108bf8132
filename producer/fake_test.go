package producer

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS records sends in memory; it is the unit tests' and benchmarks' SQS.
type fakeSQS struct {
	maxSize int
	// entryFailure, if set, may fail one batch entry by body (SenderFault as returned).
	entryFailure func(body string) *types.BatchResultErrorEntry
	// sendError, if set, may fail a SendMessage by body.
	sendError func(body string) error

	mu             sync.Mutex
	attributeReads map[string]int
	sends          []*sqs.SendMessageInput
	batches        []*sqs.SendMessageBatchInput
	next           int
}

func newFake() *fakeSQS {
	return &fakeSQS{maxSize: 1 << 20, attributeReads: map[string]int{}}
}

func (f *fakeSQS) id() string {
	f.next++
	return "m-" + strconv.Itoa(f.next)
}

func (f *fakeSQS) SendMessage(ctx context.Context, input *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if f.sendError != nil {
		if err := f.sendError(aws.ToString(input.MessageBody)); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends = append(f.sends, input)
	return &sqs.SendMessageOutput{MessageId: aws.String(f.id())}, nil
}

func (f *fakeSQS) SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(input.Entries) > 10 {
		return nil, fmt.Errorf("fake: %d entries", len(input.Entries))
	}
	f.batches = append(f.batches, input)
	output := &sqs.SendMessageBatchOutput{}
	for _, entry := range input.Entries {
		if f.entryFailure != nil {
			if failed := f.entryFailure(aws.ToString(entry.MessageBody)); failed != nil {
				failed.Id = entry.Id
				output.Failed = append(output.Failed, *failed)
				continue
			}
		}
		output.Successful = append(output.Successful, types.SendMessageBatchResultEntry{Id: entry.Id, MessageId: aws.String(f.id())})
	}
	return output, nil
}

func (f *fakeSQS) GetQueueAttributes(ctx context.Context, input *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attributeReads[aws.ToString(input.QueueUrl)]++
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(f.maxSize)}}, nil
}

// sent returns every message sent, alone or in batches, as (body, attributes, delay).
func (f *fakeSQS) sent() []sentMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []sentMessage
	for _, s := range f.sends {
		all = append(all, sentMessage{aws.ToString(s.MessageBody), s.MessageAttributes, s.DelaySeconds, aws.ToString(s.MessageGroupId), aws.ToString(s.MessageDeduplicationId), s.MessageSystemAttributes})
	}
	for _, b := range f.batches {
		for _, e := range b.Entries {
			all = append(all, sentMessage{aws.ToString(e.MessageBody), e.MessageAttributes, e.DelaySeconds, aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId), e.MessageSystemAttributes})
		}
	}
	return all
}

func (f *fakeSQS) batchCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.batches)
}

type sentMessage struct {
	body       string
	attributes map[string]types.MessageAttributeValue
	delay      int32
	group      string
	dedup      string
	system     map[string]types.MessageSystemAttributeValue
}

func (m sentMessage) attribute(name string) string {
	return aws.ToString(m.attributes[name].StringValue)
}

// memoryUnique is a UniqueStore in memory, atomic under its mutex.
type memoryUnique struct {
	mu      sync.Mutex
	records map[string]UniqueRecord
}

func newMemoryUnique() *memoryUnique { return &memoryUnique{records: map[string]UniqueRecord{}} }

func (m *memoryUnique) Reserve(ctx context.Context, key, owner string, now, expires time.Time) (UniqueRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held, ok := m.records[key]; ok && held.ExpiresAt.After(now) {
		return held, false, nil
	}
	m.records[key] = UniqueRecord{Owner: owner, ExpiresAt: expires}
	return m.records[key], true, nil
}

func (m *memoryUnique) Confirm(ctx context.Context, key, owner, messageID string, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.records[key].Owner != owner {
		return fmt.Errorf("%w: key %q", ErrUniqueKeyNotHeld, key)
	}
	m.records[key] = UniqueRecord{Owner: owner, MessageID: messageID, ExpiresAt: expires}
	return nil
}

func (m *memoryUnique) Release(ctx context.Context, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held := m.records[key]; held.Owner == owner && held.MessageID == "" {
		delete(m.records, key)
	}
	return nil
}

func (m *memoryUnique) Free(ctx context.Context, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.records[key].Owner == owner {
		delete(m.records, key)
	}
	return nil
}
