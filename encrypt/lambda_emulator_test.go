package encrypt_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
	"github.com/sqsworker/sqsworker/producer"
)

// lambdaFunction serves the Lambda host's batch handler as an Invoke endpoint for the
// local event source mapping (lambda/localesm), in process.
func lambdaFunction(t *testing.T, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event events.SQSEvent
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), patience)
		defer cancel()
		response, err := handle(ctx, event)
		if err != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			_ = json.NewEncoder(w).Encode(map[string]string{"errorType": "BatchError", "errorMessage": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(response)
	}))
	t.Cleanup(server.Close)
	return server.URL
}

// On the Lambda host: a job under the allowed key reaches its handler in clear; one
// under another key is dead-lettered by the host with its reason, its ciphertext kept.
func TestLambdaHostDecryptsAndDeadLettersAKeyNotAllowedOnEmulator(t *testing.T) {
	t.Parallel()
	client, keys := testenv.SQS(t), &countingKMS{Client: testenv.KMS(t)}
	allowed, _ := testenv.NewKMSKey(t, keys.Client)
	other, _ := testenv.NewKMSKey(t, keys.Client)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{VisibilityTimeout: patience, MaxReceiveCount: 5})
	good, err := producer.Prepare(queue.URL, producer.Job{Type: "charge", Body: `{"card":"4111-good"}`})
	require.NoError(t, err)
	_, err = encryptingProducer(t, client, keys, allowed, producer.Config{}).SendPrepared(context.Background(), good)
	require.NoError(t, err)
	_, err = encryptingProducer(t, client, keys, other, producer.Config{}).Send(context.Background(), queue.URL, producer.Job{Type: "charge", Body: `{"card":"4111-bad"}`})
	require.NoError(t, err)

	var seen bodies
	batch, err := lambda.NewBatchHandler(sqsworker.Chain(seen.handler(), newDecrypter(t, keys, allowed).Middleware()), lambda.WithSQSClient(client))
	require.NoError(t, err)
	esmtest.Run(t, client, localesm.Config{QueueURL: queue.URL, FunctionURLs: []string{lambdaFunction(t, batch.Handle)}, ReportBatchItemFailures: true, WaitTime: time.Second})

	testenv.Eventually(t, patience, "both records settled by the mapping", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.URL)
		return len(seen.all()) == 1 && visible+inFlight == 0
	})
	assert.Equal(t, map[string]string{good.JobID(): `{"card":"4111-good"}`}, seen.all())
	dead := receiveOne(t, client, queue.DeadLetterQueueURL)
	assert.Equal(t, encrypt.ReasonKeyNotAllowed, attribute(dead, sqsworker.AttributeFailureReason))
	assert.NotContains(t, aws.ToString(dead.Body), "4111-bad")
	_, decrypted := keys.calls()
	assert.Equal(t, []string{allowed}, decrypted, "KMS decrypted the allowed job's data key only")
}
