package jobs_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/testing/esmtest"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/jobs"
	"github.com/sqsworker/sqsworker/lambda"
	"github.com/sqsworker/sqsworker/lambda/localesm"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/table"
)

// countingAPI counts the DynamoDB calls of a store by operation.
type countingAPI struct {
	table.API
	mu    sync.Mutex
	calls map[string]int
}

func newCountingAPI(api table.API) *countingAPI {
	return &countingAPI{API: api, calls: map[string]int{}}
}

func (c *countingAPI) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

// snapshot returns the counts so far.
func (c *countingAPI) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for op, n := range c.calls {
		out[op] = n
	}
	return out
}

// writes is the number of write calls so far.
func (c *countingAPI) writes() int {
	s := c.snapshot()
	return s["PutItem"] + s["UpdateItem"] + s["DeleteItem"]
}

func (c *countingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count("PutItem")
	return c.API.PutItem(ctx, in, opts...)
}

func (c *countingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count("GetItem")
	return c.API.GetItem(ctx, in, opts...)
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem")
	return c.API.UpdateItem(ctx, in, opts...)
}

func (c *countingAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.count("DeleteItem")
	return c.API.DeleteItem(ctx, in, opts...)
}

// newStore returns a store on a fresh table of the emulator, and the counting client
// it calls through.
func newStore(t *testing.T) (*jobs.Store, *countingAPI) {
	t.Helper()
	client := testenv.DynamoDB(t)
	api := newCountingAPI(client)
	store, err := jobs.NewStore(api, jobs.Config{Table: testenv.NewTable(t, client)})
	require.NoError(t, err)
	return store, api
}

// startPoller runs a poller on queueURL for the test.
func startPoller(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	server, err := poller.New(client, poller.Config{QueueURL: queueURL, WaitTime: time.Second, Logger: slog.New(slog.DiscardHandler)}, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

// startLambda runs handler on the Lambda host behind the local event source mapping
// (lambda/localesm) on queueURL: a function endpoint in this process that hands each
// event to lambda.NewBatchHandler, with a 30 s invocation deadline.
func startLambda(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler) {
	t.Helper()
	batch, err := lambda.NewBatchHandler(handler, lambda.WithSQSClient(client), lambda.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
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
	esmtest.Run(t, client, localesm.Config{QueueURL: queueURL, FunctionURLs: []string{fn.URL}, BatchSize: 1, ReportBatchItemFailures: true, WaitTime: time.Second})
}

// host is one of the two hosts a test runs on.
type host struct {
	name  string
	start func(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler)
}

var hosts = []host{
	{"poller", func(t *testing.T, client *sqs.Client, queueURL string, handler sqsworker.Handler) {
		startPoller(t, client, queueURL, handler)
	}},
	{"lambda", startLambda},
}
