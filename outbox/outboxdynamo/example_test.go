package outboxdynamo_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/outbox"
	"github.com/sqsworker/sqsworker/outbox/outboxdynamo"
	"github.com/sqsworker/sqsworker/producer"
)

type OrderPlaced struct {
	OrderID string `json:"orderId"`
}

// An order and its webhook job in one DynamoDB transaction: both are written, or
// neither.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	box, err := outboxdynamo.New(outboxdynamo.Config{Table: "orders-outbox"})
	if err != nil {
		log.Fatal(err)
	}
	order := types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String("orders"),
		Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "o-1"}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}}
	items, _, err := box.TransactItems([]types.TransactWriteItem{order}, queueURL,
		producer.Job{Type: "order-webhook", Payload: OrderPlaced{OrderID: "o-1"}})
	if err != nil {
		log.Fatal(err) // for example outboxdynamo.ErrTooManyItems past 100 items
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		log.Fatal(err) // cancelled: no order, no job
	}

	// The container relay (or dynamostream.New on Lambda).
	jobs, err := producer.New(sqs.NewFromConfig(cfg), producer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outboxdynamo.NewRelay(db, box, jobs, outbox.RelayConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil { // nil after a graceful stop on SIGTERM: exit 0
		log.Fatal(err)
	}
}

const queueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/webhooks"
