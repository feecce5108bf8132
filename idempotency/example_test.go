package idempotency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// ExampleMiddleware runs one delivery twice: the duplicate skips the handler and sees
// the stored result.
func ExampleMiddleware() {
	store := idempotency.NewMemoryStore() // idempotency.NewDynamoDBStore(client, table) in production
	deliver := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		fmt.Println("delivering", m.ID)
		idempotency.SetResult(ctx, []byte("HTTP 200"))
		return nil
	})
	handler := sqsworker.Chain(deliver, idempotency.Middleware(store, idempotency.Config{
		KeyFunc:     idempotency.KeyFromJSONField("deliveryId"),
		PayloadHash: idempotency.HashJSONFields("url", "payload"),
		OnCompletedDuplicate: func(_ context.Context, m *sqsworker.Message, r idempotency.Record) error {
			fmt.Printf("duplicate %s: already delivered (%s)\n", m.ID, r.Result)
			return nil
		},
	}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := `{"deliveryId":"D-1","url":"https://example.com/hook","payload":{"n":1}}`
	fmt.Println(handler.Handle(ctx, &sqsworker.Message{ID: "m-1", Body: body}))
	fmt.Println(handler.Handle(ctx, &sqsworker.Message{ID: "m-2", Body: body}))
	// Output:
	// delivering m-1
	// <nil>
	// duplicate m-2: already delivered (HTTP 200)
	// <nil>
}

// The package comment's set-up.
func Example_dynamoDB() {
	var cfg aws.Config // config.LoadDefaultConfig(ctx)
	deliver := sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error { return nil })
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), "webhook-idempotency")
	handler := sqsworker.Chain(deliver, idempotency.Middleware(store, idempotency.Config{
		KeyFunc:     idempotency.KeyFromJSONField("deliveryId"),
		PayloadHash: idempotency.HashJSONFields("url", "payload"),
		KeyPrefix:   "webhook",
	}))
	// in the handler, optionally: idempotency.SetResult(ctx, responseBytes)
	_ = handler
}
