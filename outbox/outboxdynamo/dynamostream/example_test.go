package dynamostream_test

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo/dynamostream"
	"github.com/sqsworker/sqsworker/producer"
)

// The Lambda relay: a function on the outbox table's stream, with
// FunctionResponseTypes ["ReportBatchItemFailures"] on its event source mapping.
func ExampleHandler() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: "orders-outbox"})
	if err != nil {
		log.Fatal(err)
	}
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	handler, err := dynamostream.New(dynamodb.NewFromConfig(cfg), box, jobs, nil)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(handler.Handle)
}
