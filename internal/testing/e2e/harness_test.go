package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/poller"
	"github.com/sqsworker/sqsworker/table"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerProcessVariable) != "" {
		os.Exit(runWorkerProcess())
	}
	os.Exit(m.Run())
}

// effects counts committed side effects per key, and the receive count each was committed at.
type effects struct {
	mu            sync.Mutex
	count         map[string]int
	receiveCounts map[string][]int
}

func newEffects() *effects {
	return &effects{count: map[string]int{}, receiveCounts: map[string][]int{}}
}

func (e *effects) commit(key string, receiveCount int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.count[key]++
	e.receiveCounts[key] = append(e.receiveCounts[key], receiveCount)
}

func (e *effects) of(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count[key]
}

func (e *effects) receiveCountsOf(key string) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.receiveCounts[key]...)
}

// idempotent wraps handler in the idempotency middleware on table, keyed by a JSON field.
func idempotent(t *testing.T, table, keyField string, handler sqsworker.Handler) sqsworker.Handler {
	t.Helper()
	store := idempotency.NewDynamoDBStore(testenv.DynamoDB(t), table)
	return sqsworker.Chain(handler, idempotency.Middleware(store, idempotency.Config{
		KeyFunc: idempotency.KeyFromJSONField(keyField),
	}))
}

// startPoller starts a poller on queueURL and shuts it down when the test ends.
func startPoller(t *testing.T, api poller.API, config poller.Config, handler sqsworker.Handler) *poller.Server {
	t.Helper()
	if config.Logger == nil {
		config.Logger = testLogger(t)
	}
	server, err := poller.New(api, config, handler)
	require.NoError(t, err)
	require.NoError(t, server.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	})
	return server
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// record reads an idempotency record's raw attributes (nil when there is none).
// record reads the idempotency record of key (a key without a prefix, as the
// middleware stores it: in the table's idempotency namespace).
func record(t *testing.T, client *dynamodb.Client, tableName, key string) map[string]dynamodbtypes.AttributeValue {
	t.Helper()
	stored, err := idempotency.StoredKey("", key)
	require.NoError(t, err)
	output, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(tableName),
		Key:            map[string]dynamodbtypes.AttributeValue{table.PartitionKey: &dynamodbtypes.AttributeValueMemberS{Value: stored}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return output.Item
}

func stringAttribute(item map[string]dynamodbtypes.AttributeValue, name string) string {
	if value, ok := item[name].(*dynamodbtypes.AttributeValueMemberS); ok {
		return value.Value
	}
	if value, ok := item[name].(*dynamodbtypes.AttributeValueMemberN); ok {
		return value.Value
	}
	return ""
}

func send(t *testing.T, client *sqs.Client, queueURL, body string) string {
	t.Helper()
	output, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(queueURL),
		MessageBody: aws.String(body),
	})
	require.NoError(t, err)
	return aws.ToString(output.MessageId)
}

func requireEmpty(t *testing.T, client *sqs.Client, queueURL, what string) {
	t.Helper()
	visible, inFlight := testenv.Counts(t, client, queueURL)
	require.Equal(t, 0, visible+inFlight, "%s holds %d visible and %d in-flight messages", what, visible, inFlight)
}

func body(field, key string) string {
	return fmt.Sprintf(`{%q:%q}`, field, key)
}

func lines(text string) []string {
	return strings.Split(strings.TrimSpace(text), "\n")
}
