package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
)

// withIdempotency wraps handler in the idempotency middleware keyed on the body's "key"
// field when LAMBDATEST_IDEMPOTENCY_TABLE names a DynamoDB table.
func withIdempotency(handler sqsworker.Handler) (sqsworker.Handler, error) {
	table := os.Getenv("LAMBDATEST_IDEMPOTENCY_TABLE")
	if table == "" {
		return handler, nil
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("loading AWS config: %w", err)
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), table)
	return sqsworker.Chain(handler, idempotency.Middleware(store, idempotency.Config{
		KeyFunc:   idempotency.KeyFromJSONField("key"),
		KeyPrefix: "lambdatest",
	})), nil
}
