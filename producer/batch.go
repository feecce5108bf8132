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
// allow (10 entries and 1 MiB per call), in order: [Prepare] for each job, then
// [Producer.SendPreparedBatch]. An entry that fails on SQS's side (not a sender fault)
// is sent again alone with SendMessage; one that fails through the sender's fault is
// reported. A unique key repeated within jobs is sent once; its repeats get a
// [*DuplicateJobError]. The results match jobs one to one; the error joins the failed
// jobs' errors, each naming its index, and is nil when every job was sent.
func (p *Producer) SendBatch(ctx context.Context, queueURL string, jobs []Job) ([]Result, error) {
	results := make([]Result, len(jobs))
	messages := make([]Prepared, len(jobs))
	for i, job := range jobs {
		if job, results[i].Err = p.withTenant(queueURL, job); results[i].Err == nil {
			messages[i], results[i].Err = Prepare(queueURL, job)
		}
	}
	p.sendPreparedBatch(ctx, messages, results)
	return results, joinResults(results)
}

// SendPreparedBatch sends prepared jobs as [Producer.SendBatch] sends jobs: to each
// message's queue (the messages may name several, each sent in its own calls), with the
// checks and the send of [Producer.SendPrepared]. The results match messages one to one;
// the error joins the failed messages' errors, each naming its index.
func (p *Producer) SendPreparedBatch(ctx context.Context, messages []Prepared) ([]Result, error) {
	results := make([]Result, len(messages))
	p.sendPreparedBatch(ctx, messages, results)
	return results, joinResults(results)
}

// sendPreparedBatch sends the messages whose result has no error yet and records their
// results. A unique key (standard queues) repeated within messages is reserved once: a
// repeat would wait for a send that waits for it.
func (p *Producer) sendPreparedBatch(ctx context.Context, messages []Prepared, results []Result) {
	byQueue := map[string][]int{} // queue → indexes of its ready messages
	var queues []string
	ready := make([]*outgoing, len(messages))
	firstOfKey := map[string]int{} // unique key → index of its first message
	repeats := map[int]int{}       // index of a repeated unique key → index of its first message
	for i, m := range messages {
		if results[i].Err != nil {
			continue
		}
		if m.reserves() {
			if first, seen := firstOfKey[m.UniqueKey]; seen {
				repeats[i] = first
				continue
			}
			firstOfKey[m.UniqueKey] = i
		}
		out, err := p.ready(ctx, m)
		if err != nil {
			results[i].Err = err
			continue
		}
		ready[i] = out
		if _, ok := byQueue[m.QueueURL]; !ok {
			queues = append(queues, m.QueueURL)
		}
		byQueue[m.QueueURL] = append(byQueue[m.QueueURL], i)
	}
	for _, queue := range queues {
		indexes := byQueue[queue]
		batch := make([]*outMessage, len(indexes))
		for j, i := range indexes {
			batch[j] = ready[i].message
		}
		for j, result := range p.sendBatch(ctx, queue, batch) {
			i := indexes[j]
			results[i].MessageID, results[i].Err = p.finish(ctx, ready[i], result)
		}
	}
	for i, first := range repeats {
		if results[first].Err != nil {
			results[i].Err = fmt.Errorf("producer: not sent: job %d of the batch has the same unique key %q and was not sent", first, messages[i].UniqueKey)
			continue
		}
		results[i].Err = &DuplicateJobError{Key: messages[i].UniqueKey, MessageID: results[first].MessageID}
	}
}

// joinResults joins the errors of results, each naming its index.
func joinResults(results []Result) error {
	var errs []error
	for i, result := range results {
		if result.Err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", i, result.Err))
		}
	}
	return errors.Join(errs...)
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
