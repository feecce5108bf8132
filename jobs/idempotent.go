package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/idempotency"
)

// A job that runs under the idempotency middleware already has a record written on its
// hot path: the idempotency record, claimed (IN_PROGRESS) before the handler and
// completed (COMPLETED, with the result) after it. With MiddlewareConfig.InIdempotencyRecord
// the middleware writes nothing of its own for such a job, and [Store.Get] reads the
// job's state and result from that record (Config.Idempotency), found by the job id: the
// idempotency key of a job sent without Job.IdempotencyKey (idempotency.KeyFromProducer).

// idempotencyRecord reads the idempotency record whose key is job id. found is false
// when Config.Idempotency is nil or there is no such record.
func (s *Store) idempotencyRecord(ctx context.Context, id string) (idempotency.Record, bool, error) {
	if s.config.Idempotency == nil {
		return idempotency.Record{}, false, nil
	}
	key, err := idempotency.StoredKey(s.config.IdempotencyKeyPrefix, id)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("jobs: job %s: %w", id, err)
	}
	r, err := s.config.Idempotency.Get(ctx, key)
	if errors.Is(err, idempotency.ErrNotFound) {
		return idempotency.Record{}, false, nil
	}
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("jobs: reading job %s's idempotency record: %w", id, err)
	}
	if r.Expired(s.config.Now()) || r.Claimable(s.config.Now()) && r.Status == idempotency.StatusInProgress {
		return idempotency.Record{}, false, nil // an ended claim: its holder failed or crashed
	}
	return r, true, nil
}

// merge completes own (the job's own record; found false when it has none) with the
// idempotency record of the job: its state (running or succeeded) unless own says the
// job was cancelled, and its result.
func merge(id string, own Record, found bool, r idempotency.Record) Record {
	if !found {
		own = Record{ID: id}
	}
	if own.State != StateCancelled {
		own.State = StateRunning
		if r.Status == idempotency.StatusCompleted {
			own.State = StateSucceeded
		}
	}
	if ref, ok := ParseResultRef(r.Result); ok {
		own.Result, own.ResultRef = nil, &ref
	} else if len(r.Result) > 0 && json.Valid(r.Result) {
		own.Result, own.ResultRef = append(json.RawMessage(nil), r.Result...), nil
	}
	if own.ExpiresAt.IsZero() || r.ExpiresAt.After(own.ExpiresAt) {
		own.ExpiresAt = r.ExpiresAt
	}
	return own
}

// cancelledBeforeStart reads (eventually consistent: half a read unit, no write) whether
// the job's own record asks for its cancellation, for a job recorded in its idempotency
// record.
func (s *Store) cancelledBeforeStart(ctx context.Context, id string) (bool, error) {
	k, err := key(id)
	if err != nil {
		return false, err
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.config.Table), Key: k})
	if err != nil {
		return false, fmt.Errorf("jobs: reading job %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return false, nil
	}
	r, err := record(out.Item)
	if err != nil {
		return false, fmt.Errorf("jobs: job %s: %w", id, err)
	}
	return r.CancelRequested && (r.ExpiresAt.IsZero() || !r.ExpiresAt.Before(s.config.Now())), nil
}
