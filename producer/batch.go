package producer

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Result is the outcome of one job of [Producer.SendBatch].
type Result struct {
	// MessageID is the SQS message id of the job, when it was sent.
	MessageID string
	// Err is why the job was not sent (the errors of [Producer.Send]), or nil.
	Err error
}

// SendBatch sends jobs to queueURL in as few SendMessageBatch calls as SQS's limits
// allow (10 entries and 1 MiB per call), in order. An entry that fails on SQS's side
// (not a sender fault) is sent again alone with SendMessage; one that fails through the
// sender's fault is reported. A unique key repeated within jobs is sent once; its
// repeats get a [*DuplicateJobError]. The results match jobs one to one; the error joins
// the failed jobs' errors, each naming its index, and is nil when every job was sent.
func (p *Producer) SendBatch(ctx context.Context, queueURL string, jobs []Job) ([]Result, error) {
	results := make([]Result, len(jobs))
	var ready []*outgoing
	var indexes []int
	firstOfKey := map[string]int{} // unique key → index of its first job in this batch
	repeats := map[int]int{}       // index of a repeated unique key → index of its first job
	for i, job := range jobs {
		if job.UniqueKey != "" && !isFIFO(queueURL) {
			if first, seen := firstOfKey[job.UniqueKey]; seen {
				repeats[i] = first // not reserved: it would wait for a send that waits for it
				continue
			}
			firstOfKey[job.UniqueKey] = i
		}
		out, err := p.prepare(ctx, queueURL, job)
		if err != nil {
			results[i].Err = err
			continue
		}
		ready = append(ready, out)
		indexes = append(indexes, i)
	}
	messages := make([]*outMessage, len(ready))
	for j, out := range ready {
		messages[j] = out.message
	}
	for j, result := range p.sendBatch(ctx, queueURL, messages) {
		i := indexes[j]
		results[i].MessageID, results[i].Err = p.finish(ctx, ready[j], result)
	}
	for i, first := range repeats {
		if results[first].Err != nil {
			results[i].Err = fmt.Errorf("producer: not sent: job %d of the batch has the same unique key %q and was not sent", first, jobs[i].UniqueKey)
			continue
		}
		results[i].Err = &DuplicateJobError{Key: jobs[i].UniqueKey, MessageID: results[first].MessageID}
	}
	var errs []error
	for i, result := range results {
		if result.Err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", i, result.Err))
		}
	}
	return results, errors.Join(errs...)
}

// sendBatch sends messages with SendMessageBatch (sqsx packs them by 10 entries and
// 1 MiB per call), retries each entry that failed on SQS's side alone, and returns one
// result per message. A failed call (which the SDK has already retried) fails its
// entries.
func (p *Producer) sendBatch(ctx context.Context, queueURL string, messages []*outMessage) []sendResult {
	entries := make([]types.SendMessageBatchRequestEntry, len(messages))
	for i, message := range messages {
		entries[i] = message.entry()
	}
	results := make([]sendResult, len(messages))
	for i, result := range sqsx.SendMessages(ctx, p.api, queueURL, entries, sqsinfo.MaxBatchBytes) {
		entryErr, isEntry := errors.AsType[*sqsx.EntryError](result.Err)
		switch {
		case result.Err == nil:
			results[i].id = result.MessageID
		case isEntry && !entryErr.SenderFault:
			results[i] = p.sendOne(ctx, messages[i]) // SQS's fault or no answer: once more, alone
		default:
			results[i].err = fmt.Errorf("producer: sending to %s: %w", queueURL, result.Err)
		}
	}
	return results
}

// IsBatchCallError reports whether err, the Err of a [Result] of [Producer.SendBatch], is
// the failure of a whole SendMessageBatch request (after the SDK's own retries): SQS took
// none of that request's jobs, so sending them again may succeed. A job SQS refused on its
// own (a sender fault) or one refused before any call (too large, a duplicate) is not.
func IsBatchCallError(err error) bool {
	_, ok := errors.AsType[*sqsx.CallError](err)
	return ok
}
