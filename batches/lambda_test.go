package batches_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/batches"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
)

// startLambda runs handler on the Lambda host behind the local event source mapping
// (lambda/localesm) on queueURL: a function endpoint in this process that hands each
// event to lambda.NewBatchHandler, with a 30 s invocation deadline.
func startLambda(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler) {
	t.Helper()
	batch, err := lambda.NewBatchHandler(handler, lambda.WithSQSClient(client), lambda.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var event events.SQSEvent
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		response, err := batch.Handle(ctx, event)
		if err != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": "error", "errorMessage": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(response)
	}))
	t.Cleanup(fn.Close)
	esmtest.Run(t, client, localesm.Config{QueueURL: queueURL, FunctionURLs: []string{fn.URL}, BatchSize: 5, ReportBatchItemFailures: true, WaitTime: time.Second})
}

// TestEmulatorLambdaHost: the same middleware on the Lambda host: a job that fails once,
// one dead-lettered by the adapter; complete fires once; after the redrive, success
// fires once.
func TestEmulatorLambdaHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 5)
	w := newWorker(t, e.queue.URL)
	startLambda(t, e.sqs, e.queue.URL, sqsworker.Chain(w, e.b.Middleware(batches.MiddlewareConfig{MaxReceiveCount: 5})))
	batch := e.open(t)
	ids := addAndSeal(t, e, batch, jobsOf(4, func(i int, j *work) {
		j.FailTimes = map[bool]int{true: 1}[i == 1]
		j.DeadOnce = i == 3
	}))
	status := e.waitStatus(t, batch.ID(), wait, "complete fired", completeFired)
	assert.Equal(t, batches.Counts{Added: 4, Succeeded: 3, DeadLettered: 1}, status.Counts)
	assert.Equal(t, 2, w.calls(ids[1]))
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1}, e.settled(t))
	redriveAll(t, e, 1)
	status = e.waitStatus(t, batch.ID(), wait, "success fired", successFired)
	assert.Equal(t, batches.Counts{Added: 4, Succeeded: 4}, status.Counts)
	assert.Equal(t, map[string]int{batch.ID() + ":complete": 1, batch.ID() + ":success": 1}, e.settled(t))
}
