package jobs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/sqsworkertest"
)

type monthlyReport struct {
	Month string `json:"month"`
}

type reportResult struct {
	URL   string `json:"url"`
	Bytes int    `json:"bytes"`
}

// keyed runs handler inside the idempotency middleware (a memory store) keyed by the
// message id, and returns the store.
func keyed(handler sqsworker.Handler) (sqsworker.Handler, *idempotency.MemoryStore) {
	store := idempotency.NewMemoryStore()
	middleware := idempotency.Middleware(store, idempotency.Config{KeyFunc: func(m *sqsworker.Message) (string, error) { return m.ID, nil }})
	return middleware(handler), store
}

// The value a JSON handler returns is the job's result: kept in the completed idempotency
// record, so a duplicate's record has it, and the handler ran once.
func TestJSONHandlerKeepsTheReturnedResult(t *testing.T) {
	calls := 0
	handler, store := keyed(jobs.JSONHandler(func(ctx context.Context, job monthlyReport) (reportResult, error) {
		calls++
		return reportResult{URL: "s3://reports/" + job.Month + ".pdf", Bytes: 1024}, nil
	}))
	message := sqsworkertest.NewMessage(`{"month":"2026-11"}`)
	for range 2 { // a duplicate delivery
		result := sqsworkertest.Run(context.Background(), handler, message)
		require.NoError(t, result.Err)
		assert.True(t, result.Deleted)
	}
	assert.Equal(t, 1, calls)
	key, err := idempotency.StoredKey("", message.ID)
	require.NoError(t, err)
	record, err := store.Get(context.Background(), key)
	require.NoError(t, err)
	assert.JSONEq(t, `{"url":"s3://reports/2026-11.pdf","bytes":1024}`, string(record.Result))
}

// Outside both middlewares the result would be kept nowhere: the handler is not called
// and the job fails permanently with ReasonNoJobRecord, nothing done, nothing lost.
func TestJSONHandlerWithoutARecordIsNotRun(t *testing.T) {
	calls := 0
	handler := jobs.JSONHandler(func(ctx context.Context, job monthlyReport) (reportResult, error) {
		calls++
		return reportResult{}, nil
	})
	result := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage(`{"month":"2026-11"}`))
	assert.Zero(t, calls)
	assert.True(t, result.DeadLettered)
	assert.Equal(t, jobs.ReasonNoJobRecord, result.Outcome.Reason)
}

// A result over the record's bound (no LargeResults here) is not dropped: the job fails
// permanently with ReasonResultNotKept and the size in its error; a malformed body is the
// JSON handler's MalformedBody; the handler's own error is returned as it is.
func TestJSONHandlerRefusals(t *testing.T) {
	handler, _ := keyed(jobs.JSONHandler(func(ctx context.Context, job monthlyReport) (string, error) {
		switch job.Month {
		case "huge":
			return strings.Repeat("x", jobs.MaxResultBytes), nil
		case "transient":
			return "", context.DeadlineExceeded
		}
		return "ok", nil
	}))
	huge := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage(`{"month":"huge"}`))
	assert.True(t, huge.DeadLettered)
	assert.Equal(t, jobs.ReasonResultNotKept, huge.Outcome.Reason)
	assert.ErrorIs(t, huge.Err, jobs.ErrResultTooLarge)

	malformed := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage(`{"month":1}`))
	assert.True(t, malformed.DeadLettered)
	assert.Equal(t, "MalformedBody", malformed.Outcome.Reason)

	transient := sqsworkertest.Run(context.Background(), handler, sqsworkertest.NewMessage(`{"month":"transient"}`))
	assert.ErrorIs(t, transient.Err, context.DeadlineExceeded)
	assert.False(t, transient.Deleted, "retried")
}

// RegisterJSON routes a job type to a handler with a result.
func TestRegisterJSONWithAResult(t *testing.T) {
	mux := sqsworker.NewServeMux()
	jobs.RegisterJSON(mux, "monthlyReport", func(ctx context.Context, job monthlyReport) (reportResult, error) {
		return reportResult{URL: job.Month}, nil
	})
	handler, store := keyed(mux)
	message := sqsworkertest.NewMessage(`{"month":"2026-10"}`)
	message.MessageAttributes = map[string]sqsworker.MessageAttribute{sqsworker.AttributeJobType: {DataType: "String", StringValue: "monthlyReport"}}
	result := sqsworkertest.Run(context.Background(), handler, message)
	require.NoError(t, result.Err)
	key, err := idempotency.StoredKey("", message.ID)
	require.NoError(t, err)
	record, err := store.Get(context.Background(), key)
	require.NoError(t, err)
	assert.JSONEq(t, `{"url":"2026-10","bytes":0}`, string(record.Result))
}
