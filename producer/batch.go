package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Result is the outcome of one job of [Producer.SendBatch].
type Result struct {
	// MessageID is the SQS message id of the job, when it was sent.
	MessageID string
	// Err is why the job was not sent (the errors of [Producer.Send]), or nil.
	Err error
}

// SendBatch sends jobs to queueURL in as few SendMessageBatch calls as SQS's limits
// allow (10 entries and 1 MiB per call), in order. An entry that fails on SQS's side is
// sent again alone with SendMessage; one that fails through the sender's fault is
// reported. The results match jobs one to one; the error joins the failed jobs' errors,
// each naming its index, and is nil when every job was sent.
func (p *Producer) SendBatch(ctx context.Context, queueURL string, jobs []Job) ([]Result, error) {
	results := make([]Result, len(jobs))
	prepared := make([]*outgoing, len(jobs))
	for i, job := range jobs {
		prepared[i], results[i].Err = p.prepare(ctx, queueURL, job)
	}
	var chunk []int // indexes of the jobs of the next call
	chunkBytes := 0
	flush := func() {
		messages := make([]*outMessage, len(chunk))
		for j, i := range chunk {
			messages[j] = prepared[i].message
		}
		for j, result := range p.sendBatch(ctx, queueURL, messages) {
			i := chunk[j]
			results[i].MessageID, results[i].Err = p.finish(ctx, prepared[i], result)
		}
		chunk, chunkBytes = chunk[:0], 0
	}
	for i, out := range prepared {
		if out == nil {
			continue
		}
		if len(chunk) > 0 && chunkBytes+out.message.size > maxBatchBytes {
			flush()
		}
		chunk = append(chunk, i)
		chunkBytes += out.message.size
		if len(chunk) == maxBatchEntries {
			flush()
		}
	}
	if len(chunk) > 0 {
		flush()
	}
	var errs []error
	for i, result := range results {
		if result.Err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", i, result.Err))
		}
	}
	return results, errors.Join(errs...)
}

// sendBatch sends at most 10 messages, together at most 1 MiB, in one SendMessageBatch,
// retrying entries that failed on SQS's side alone, and returns one result per message.
func (p *Producer) sendBatch(ctx context.Context, queueURL string, messages []*outMessage) []sendResult {
	results := make([]sendResult, len(messages))
	entries := make([]types.SendMessageBatchRequestEntry, len(messages))
	for i, message := range messages {
		entries[i] = message.entry(strconv.Itoa(i))
	}
	output, err := p.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		err = fmt.Errorf("producer: SendMessageBatch to %s: %w", queueURL, err)
		for i := range results {
			results[i].err = err
		}
		return results
	}
	answered := make([]bool, len(messages))
	index := func(id *string) (int, bool) {
		i, err := strconv.Atoi(aws.ToString(id))
		if err != nil || i < 0 || i >= len(messages) || answered[i] {
			return 0, false
		}
		answered[i] = true
		return i, true
	}
	for _, entry := range output.Successful {
		if i, ok := index(entry.Id); ok {
			results[i].id = aws.ToString(entry.MessageId)
		}
	}
	for _, entry := range output.Failed {
		i, ok := index(entry.Id)
		if !ok {
			continue
		}
		if entry.SenderFault {
			results[i].err = fmt.Errorf("producer: SQS refused the message for %s: %s: %s", queueURL, aws.ToString(entry.Code), aws.ToString(entry.Message))
			continue
		}
		results[i] = p.sendOne(ctx, messages[i]) // SQS's fault: once more, alone
	}
	for i, done := range answered {
		if !done {
			results[i] = p.sendOne(ctx, messages[i]) // no answer for the entry: alone
		}
	}
	return results
}
